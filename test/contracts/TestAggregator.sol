// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A Chainlink AggregatorV3Interface stand-in for tests, installed with anvil_setCode at a real
/// feed's address. No setters: tests write its four storage slots with anvil_setStorageAt
/// (slot 0 round id, 1 answer, 2 updatedAt, 3 decimals), so no transaction or key is involved.
contract TestAggregator {
    uint256 internal round;
    int256 internal price;
    uint256 internal updated;
    uint256 internal places;

    function decimals() external view returns (uint8) {
        return uint8(places);
    }

    function latestRoundData() external view returns (uint80, int256, uint256, uint256, uint80) {
        return (uint80(round), price, updated, updated, uint80(round));
    }
}
