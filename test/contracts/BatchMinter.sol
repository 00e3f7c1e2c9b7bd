// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IMintable {
    function mint(address to, uint256 amount) external;
}

/// Emits many real Transfer logs from a token in one transaction (mints through the test
/// token's open `mint`), so tests and the benchmark can fill blocks with thousands of transfers.
contract BatchMinter {
    function mintMany(address token, address[] calldata to, uint256 count, uint256 firstAmount) external {
        for (uint256 i = 0; i < count; i++) {
            IMintable(token).mint(to[i % to.length], firstAmount + i);
        }
    }
}
