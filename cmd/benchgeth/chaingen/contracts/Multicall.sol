// SPDX-License-Identifier: MIT
// Multicall: aggregates read-only calls for tipnode's benchmark chain
// (cmd/benchgeth). aggregate runs every call with STATICCALL and returns the
// return data of each; it reverts if any call fails.
pragma solidity 0.8.30;

contract Multicall {
    struct Call {
        address target;
        bytes data;
    }

    function aggregate(Call[] calldata calls) external view returns (bytes[] memory results) {
        results = new bytes[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory ret) = calls[i].target.staticcall(calls[i].data);
            require(ok, "Multicall: call failed");
            results[i] = ret;
        }
    }
}
