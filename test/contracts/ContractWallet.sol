// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A smart-contract wallet for tests (installed with anvil_setCode, its owner written to slot 0):
/// it accepts, by ERC-1271, a 65-byte signature by its owner over the hash it is asked about.
contract ContractWallet {
    address public owner;

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65 || owner == address(0)) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        return ecrecover(hash, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}
