// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

interface IMessagePasser {
    function initiateWithdrawal(address _target, uint256 _gasLimit, bytes memory _data) external payable;
}

/// @title L2CrossDomainMessenger (tipnode dev chain)
/// @notice tipnode's own L2CrossDomainMessenger predeploy
///         (0x4200000000000000000000000000000000000007) for `tipnode dev --op`,
///         written from the OP Stack specification (specs/protocol/messengers.md,
///         withdrawals.md): the L2 -> L1 half. sendMessage wraps the message in an
///         L1 relayMessage call and passes it to the L2ToL1MessagePasser as a
///         withdrawal to the L1 messenger, emitting SentMessage and
///         SentMessageExtension1. The dev chain has no L1: nothing relays the
///         message there, and no L1 -> L2 message arrives (relayMessage is absent;
///         tipnode_sendDeposit makes deposits instead).
///         Storage: slot 0 the message nonce (without its version).
contract L2CrossDomainMessenger {
    string public constant version = "2.1.0";
    uint16 public constant MESSAGE_VERSION = 1;
    /// @notice The L1 messenger: on the dev chain, the address OP chains' L1
    ///         messenger has on no L1 (a fixed placeholder, 0x...c0de).
    address public constant OTHER_MESSENGER = 0x000000000000000000000000000000000000c0DE;
    IMessagePasser internal constant PASSER = IMessagePasser(0x4200000000000000000000000000000000000016);

    // Gas the L1 relay of a message needs beyond its own gas limit.
    uint64 public constant RELAY_CONSTANT_OVERHEAD = 200_000;
    uint64 public constant MIN_GAS_DYNAMIC_OVERHEAD_NUMERATOR = 64;
    uint64 public constant MIN_GAS_DYNAMIC_OVERHEAD_DENOMINATOR = 63;
    uint64 public constant MIN_GAS_CALLDATA_OVERHEAD = 16;
    uint64 public constant RELAY_CALL_OVERHEAD = 40_000;
    uint64 public constant RELAY_RESERVED_GAS = 40_000;
    uint64 public constant RELAY_GAS_CHECK_BUFFER = 5_000;

    uint240 internal msgNonce;

    event SentMessage(address indexed target, address sender, bytes message, uint256 messageNonce, uint256 gasLimit);
    event SentMessageExtension1(address indexed sender, uint256 value);

    /// @notice The next message's nonce, its version in the top 16 bits.
    function messageNonce() public view returns (uint256) {
        return (uint256(MESSAGE_VERSION) << 240) | uint256(msgNonce);
    }

    function otherMessenger() external pure returns (address) {
        return OTHER_MESSENGER;
    }

    /// @notice The L1 gas limit the relay of a message of _minGasLimit needs.
    function baseGas(bytes calldata _message, uint32 _minGasLimit) public pure returns (uint64) {
        return RELAY_CONSTANT_OVERHEAD + uint64(_message.length) * MIN_GAS_CALLDATA_OVERHEAD
            + (uint64(_minGasLimit) * MIN_GAS_DYNAMIC_OVERHEAD_NUMERATOR) / MIN_GAS_DYNAMIC_OVERHEAD_DENOMINATOR
            + RELAY_CALL_OVERHEAD + RELAY_RESERVED_GAS + RELAY_GAS_CHECK_BUFFER;
    }

    /// @notice Sends _message to _target on L1 with msg.value.
    function sendMessage(address _target, bytes calldata _message, uint32 _minGasLimit) external payable {
        uint256 nonce = messageNonce();
        PASSER.initiateWithdrawal{ value: msg.value }(
            OTHER_MESSENGER,
            baseGas(_message, _minGasLimit),
            abi.encodeWithSignature(
                "relayMessage(uint256,address,address,uint256,uint256,bytes)",
                nonce,
                msg.sender,
                _target,
                msg.value,
                uint256(_minGasLimit),
                _message
            )
        );
        emit SentMessage(_target, msg.sender, _message, nonce, _minGasLimit);
        emit SentMessageExtension1(msg.sender, msg.value);
        unchecked {
            ++msgNonce;
        }
    }
}
