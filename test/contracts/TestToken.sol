// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// OpenZeppelin's ERC-20 (4.x) with its decimals held in storage and an open mint, for tests.
/// The test chain installs its runtime code at the real token address with `anvil_setCode`; no
/// constructor runs there, so decimals are set after installation with `setDecimals`.
contract TestToken is ERC20 {
    uint8 private _decimals;

    constructor() ERC20("Test Token", "TEST") {}

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    function setDecimals(uint8 newDecimals) external {
        _decimals = newDecimals;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
