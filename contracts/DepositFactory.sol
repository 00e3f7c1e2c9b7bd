// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {DepositForwarder} from "./DepositForwarder.sol";

/**
 * @title DepositFactory
 * @notice Deploys and flushes deposit addresses. A deposit address is the CREATE2 address, from
 * this factory, of an EIP-1167 minimal proxy to the DepositForwarder implementation with the
 * merchant's wallet (its destination) appended; the salt binds the payment session. The factory
 * is deployed through the deterministic deployment proxy, and it deploys the implementation in its
 * constructor, so the factory, the implementation and every deposit address are the same on every
 * EVM chain. Anyone may call anything here; nothing here can send value anywhere but to the
 * destination each proxy was created with.
 * @dev Stateless: no owner, no storage, no upgrade, no selfdestruct, no delegatecall.
 */
contract DepositFactory {
    /// One deposit address to flush: the proxy for (destination, salt), and the tokens to move (address(0): native coin).
    struct Deposit {
        address destination;
        bytes32 salt;
        address[] tokens;
    }

    /// The forwarder implementation every proxy delegates to (created here, so at the same address everywhere).
    address public immutable implementation;

    /// A deposit address was created.
    event Deployed(address indexed forwarder, address indexed destination, bytes32 salt);
    /// `amount` of `token` (address(0): native coin) moved from `forwarder` to its destination.
    event Flushed(address indexed forwarder, address indexed token, uint256 amount);
    /// Flushing `token` from `forwarder` reverted (unreadable balance, a false or failed transfer); nothing moved.
    event FlushFailed(address indexed forwarder, address indexed token);
    /// Creating the proxy for (destination, salt) failed; its tokens were not tried.
    event DeployFailed(address indexed forwarder, address indexed destination, bytes32 salt);

    constructor() {
        implementation = address(new DepositForwarder());
    }

    /// @notice The deposit address of (destination, salt), whether it is deployed yet or not.
    function forwarderAddress(address destination, bytes32 salt) public view returns (address) {
        bytes32 hash = keccak256(_initCode(destination));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, hash)))));
    }

    /**
     * @notice Creates the deposit address of (destination, salt) unless it exists, then flushes
     * each of `tokens` to the destination. A token that fails is reported (FlushFailed) and the
     * others are still flushed.
     */
    function deployAndFlush(address destination, bytes32 salt, address[] calldata tokens) external returns (address forwarder) {
        bool ok;
        (forwarder, ok) = _deploy(destination, salt);
        if (ok) _flush(forwarder, tokens);
    }

    /**
     * @notice deployAndFlush for many deposit addresses in one transaction. One that fails (its
     * creation or any token) is reported by an event and does not revert the others.
     */
    function sweep(Deposit[] calldata deposits) external {
        for (uint256 i = 0; i < deposits.length; ++i) {
            Deposit calldata deposit = deposits[i];
            (address forwarder, bool ok) = _deploy(deposit.destination, deposit.salt);
            if (ok) _flush(forwarder, deposit.tokens);
        }
    }

    /// The proxy's init code: EIP-1167 with a 65-byte runtime (45 bytes of proxy, then the destination).
    function _initCode(address destination) private view returns (bytes memory) {
        return abi.encodePacked(
            hex"3d604180600a3d3981f3",
            hex"363d3d373d3d3d363d73",
            implementation,
            hex"5af43d82803e903d91602b57fd5bf3",
            destination
        );
    }

    function _deploy(address destination, bytes32 salt) private returns (address forwarder, bool ok) {
        forwarder = forwarderAddress(destination, salt);
        if (forwarder.code.length != 0) return (forwarder, true);
        bytes memory code = _initCode(destination);
        address created;
        assembly ("memory-safe") {
            created := create2(0, add(code, 0x20), mload(code), salt)
        }
        ok = created == forwarder;
        if (ok) emit Deployed(forwarder, destination, salt);
        else emit DeployFailed(forwarder, destination, salt);
    }

    function _flush(address forwarder, address[] calldata tokens) private {
        for (uint256 i = 0; i < tokens.length; ++i) {
            address token = tokens[i];
            // The forwarder reverts with no data, so a hostile token cannot make this copy large.
            try DepositForwarder(payable(forwarder)).flush(token) returns (uint256 amount) {
                emit Flushed(forwarder, token, amount);
            } catch {
                emit FlushFailed(forwarder, token);
            }
        }
    }
}
