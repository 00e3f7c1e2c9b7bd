// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/**
 * @title DepositForwarder
 * @notice The code behind every deposit address. A deposit address is an EIP-1167 minimal proxy
 * (45 bytes) that delegates to this contract, followed by 20 bytes: the merchant's wallet, its
 * DESTINATION. Both are fixed in the proxy's init code, so the CREATE2 address itself commits to
 * where its money can go. `flush` moves the whole balance of one token, or of the native coin, to
 * that destination, and nowhere else; anyone may call it.
 * @dev No owner, no admin, no storage, no upgrade, no selfdestruct, no delegatecall. The only calls
 * it makes are `token.balanceOf(this)`, `token.transfer(destination, balance)` and a plain native
 * transfer to the destination. Called directly (not through a proxy) it refuses everything, so a
 * stray deposit to this contract's own address cannot be flushed to a made-up destination.
 */
contract DepositForwarder {
    /// This contract's own address: a call that does not come through a proxy is refused.
    address private immutable SELF = address(this);

    /// Where the EIP-1167 proxy's 45 bytes end and the destination's 20 begin.
    uint256 private constant DESTINATION_OFFSET = 45;

    /// Native coin sent to a deposit address after its first flush (its code exists then) is accepted.
    receive() external payable {}

    /**
     * @notice Moves the deposit address's whole balance of `token` (address(0): the native coin)
     * to its destination. Reverts, with no data, when the balance cannot be read or the transfer
     * fails: a token that returns false, or an address with no code, moves nothing. Tokens that
     * return no value (USDT on Ethereum) are moved.
     * @return amount the base units moved (0 when there was nothing to move)
     */
    function flush(address token) external returns (uint256 amount) {
        address self = SELF;
        assembly ("memory-safe") {
            if eq(address(), self) { revert(0, 0) }
            // Scratch space above the free memory pointer, which is left as it is.
            let m := mload(0x40)
            // The destination: the 20 bytes after the proxy's own 45, read from the proxy's code.
            mstore(m, 0)
            extcodecopy(address(), add(m, 12), DESTINATION_OFFSET, 20)
            let destination := mload(m)
            switch token
            case 0 {
                amount := selfbalance()
                if amount {
                    if iszero(call(gas(), destination, amount, 0, 0, 0, 0)) { revert(0, 0) }
                }
            }
            default {
                mstore(m, shl(224, 0x70a08231)) // balanceOf(address)
                mstore(add(m, 0x04), address())
                if iszero(staticcall(gas(), token, m, 0x24, m, 0x20)) { revert(0, 0) }
                if lt(returndatasize(), 0x20) { revert(0, 0) }
                amount := mload(m)
                if amount {
                    mstore(m, shl(224, 0xa9059cbb)) // transfer(address,uint256)
                    mstore(add(m, 0x04), destination)
                    mstore(add(m, 0x24), amount)
                    let ok := call(gas(), token, 0, m, 0x44, m, 0x20)
                    // OpenZeppelin SafeERC20's rule: no return data from an address with code, or exactly true.
                    switch returndatasize()
                    case 0 { ok := and(ok, gt(extcodesize(token), 0)) }
                    default { ok := and(ok, and(gt(returndatasize(), 0x1f), eq(mload(m), 1))) }
                    if iszero(ok) { revert(0, 0) }
                }
            }
        }
    }
}
