// SPDX-License-Identifier: MIT
// The contract of the client-compatibility suite (compiled by compile.mjs
// into Counter.json, which the suite loads; the suite needs no compiler).
pragma solidity 0.8.30;

contract Counter {
    uint256 public value;

    event Set(address indexed who, uint256 value);

    error Custom(uint256 code, address who);

    constructor(uint256 initial) {
        value = initial;
    }

    function set(uint256 v) external {
        value = v;
        emit Set(msg.sender, v);
    }

    function boom() external pure {
        revert("boom");
    }

    function custom(uint256 code) external view {
        revert Custom(code, msg.sender);
    }

    function forward(address payable to) external payable {
        to.transfer(msg.value);
    }
}
