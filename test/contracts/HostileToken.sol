// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/**
 * An ERC-20 that misbehaves on `transfer` as its mode says, for the deposit-forwarder tests:
 * Normal returns true; NoReturn moves and returns no data (USDT on Ethereum); False returns false
 * and moves nothing; Revert reverts; Reenter moves, then calls `target` with `data` (re-entering
 * the forwarder or the factory) before returning true.
 */
contract HostileToken {
    enum Mode { Normal, NoReturn, False, Revert, Reenter }

    mapping(address => uint256) public balanceOf;
    Mode public mode;
    address public target;
    bytes public data;
    bool public reentered;

    function setMode(Mode m) external { mode = m; }

    function setReentry(address t, bytes calldata d) external { target = t; data = d; }

    function mint(address to, uint256 amount) external { balanceOf[to] += amount; }

    function transfer(address to, uint256 amount) external returns (bool) {
        if (mode == Mode.Revert) revert("HostileToken: no");
        if (mode == Mode.False) return false;
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
        if (mode == Mode.Reenter) {
            (bool ok, ) = target.call(data);
            reentered = ok;
        }
        if (mode == Mode.NoReturn) assembly { return(0, 0) }
        return true;
    }
}
