// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// @title L1Block (tipnode dev chain)
/// @notice tipnode's own L1Block predeploy (0x4200000000000000000000000000000000000015)
///         for `tipnode dev --op`, written from the OP Stack specification
///         (specs/protocol: deposits.md, ecotone/isthmus/jovian l1-attributes.md).
///         Storage layout (packed fields at Solidity offsets from the low end):
///           slot 0: number (uint64, 0) | timestamp (uint64, 8)
///           slot 1: basefee            slot 2: hash
///           slot 3: sequenceNumber (uint64, 0) | blobBaseFeeScalar (uint32, 8) | baseFeeScalar (uint32, 12)
///           slot 4: batcherHash        slot 5: l1FeeOverhead   slot 6: l1FeeScalar
///           slot 7: blobBaseFee
///           slot 8: operatorFeeConstant (uint64, 0) | operatorFeeScalar (uint32, 8) | daFootprintGasScalar (uint16, 12)
///         Only the depositor account may call the setters.
contract L1Block {
    address public constant DEPOSITOR_ACCOUNT = 0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001;
    /// @notice The real L1Block version whose storage layout and getters
    ///         this contract has (1.7.0, Jovian).
    string public constant version = "1.7.0";

    uint64 public number;
    uint64 public timestamp;
    uint256 public basefee;
    bytes32 public hash;
    uint64 public sequenceNumber;
    uint32 public blobBaseFeeScalar;
    uint32 public baseFeeScalar;
    bytes32 public batcherHash;
    uint256 public l1FeeOverhead;
    uint256 public l1FeeScalar;
    uint256 public blobBaseFee;
    uint64 public operatorFeeConstant;
    uint32 public operatorFeeScalar;
    uint16 public daFootprintGasScalar;

    error NotDepositor();

    /// @notice The chain pays gas in ether: no custom gas token (the answers
    ///         of the real L1Block's gas paying token getters on such a chain).
    function isCustomGasToken() external pure returns (bool) {
        return false;
    }

    function gasPayingToken() external pure returns (address addr_, uint8 decimals_) {
        return (0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE, 18);
    }

    function gasPayingTokenName() external pure returns (string memory) {
        return "Ether";
    }

    function gasPayingTokenSymbol() external pure returns (string memory) {
        return "ETH";
    }

    function _onlyDepositor() internal view {
        if (msg.sender != DEPOSITOR_ACCOUNT) revert NotDepositor();
    }

    /// @notice Bedrock encoding (ABI-encoded arguments).
    function setL1BlockValues(
        uint64 _number,
        uint64 _timestamp,
        uint256 _basefee,
        bytes32 _hash,
        uint64 _sequenceNumber,
        bytes32 _batcherHash,
        uint256 _l1FeeOverhead,
        uint256 _l1FeeScalar
    ) external {
        _onlyDepositor();
        number = _number;
        timestamp = _timestamp;
        basefee = _basefee;
        hash = _hash;
        sequenceNumber = _sequenceNumber;
        batcherHash = _batcherHash;
        l1FeeOverhead = _l1FeeOverhead;
        l1FeeScalar = _l1FeeScalar;
    }

    /// @dev The packed fields common to the Ecotone, Isthmus and Jovian
    ///      encodings (calldata bytes 4..163), stored as L1Block.sol keeps
    ///      them: bytes 4..19 (baseFeeScalar, blobBaseFeeScalar,
    ///      sequenceNumber) are slot 3's low 128 bits, bytes 20..35
    ///      (timestamp, number) slot 0's.
    function _setEcotoneFields() internal {
        _onlyDepositor();
        assembly {
            sstore(3, shr(128, calldataload(4)))
            sstore(0, shr(128, calldataload(20)))
            sstore(1, calldataload(36))
            sstore(7, calldataload(68))
            sstore(2, calldataload(100))
            sstore(4, calldataload(132))
        }
    }

    /// @notice Ecotone encoding: packed calldata of 164 bytes.
    function setL1BlockValuesEcotone() external {
        require(msg.data.length == 164);
        _setEcotoneFields();
    }

    /// @notice Isthmus encoding: the Ecotone fields, operatorFeeScalar
    ///         (bytes 164..167) and operatorFeeConstant (168..175): slot 8's
    ///         low 96 bits.
    function setL1BlockValuesIsthmus() external {
        require(msg.data.length == 176);
        _setEcotoneFields();
        assembly {
            sstore(8, shr(160, calldataload(164)))
        }
    }

    /// @notice Jovian encoding: the Isthmus fields and daFootprintGasScalar
    ///         (bytes 176..177, slot 8 bits 96..111).
    function setL1BlockValuesJovian() external {
        require(msg.data.length == 178);
        _setEcotoneFields();
        assembly {
            sstore(8, or(shr(160, calldataload(164)), shl(96, shr(240, calldataload(176)))))
        }
    }
}
