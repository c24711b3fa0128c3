// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// @title L2ToL1MessagePasser (tipnode dev chain)
/// @notice tipnode's own L2ToL1MessagePasser predeploy
///         (0x4200000000000000000000000000000000000016) for `tipnode dev --op`,
///         written from the OP Stack specification (specs/protocol/withdrawals.md):
///         initiateWithdrawal records the withdrawal's hash in sentMessages
///         (slot 0 mapping) and bumps the nonce (slot 1), so the account's
///         storage root (the header's withdrawalsRoot from Isthmus) commits
///         to every withdrawal. Nothing on the dev chain proves or relays them.
contract L2ToL1MessagePasser {
    uint16 public constant MESSAGE_VERSION = 1;

    mapping(bytes32 => bool) public sentMessages;
    uint240 internal msgNonce;

    event MessagePassed(
        uint256 indexed nonce,
        address indexed sender,
        address indexed target,
        uint256 value,
        uint256 gasLimit,
        bytes data,
        bytes32 withdrawalHash
    );

    receive() external payable {
        initiateWithdrawal(msg.sender, 100000, bytes(""));
    }

    function messageNonce() public view returns (uint256) {
        return (uint256(MESSAGE_VERSION) << 240) | uint256(msgNonce);
    }

    function initiateWithdrawal(address _target, uint256 _gasLimit, bytes memory _data) public payable {
        uint256 nonce = messageNonce();
        bytes32 withdrawalHash = keccak256(abi.encode(nonce, msg.sender, _target, msg.value, _gasLimit, _data));
        sentMessages[withdrawalHash] = true;
        emit MessagePassed(nonce, msg.sender, _target, msg.value, _gasLimit, _data, withdrawalHash);
        unchecked {
            ++msgNonce;
        }
    }
}
