// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// @notice The L1Block getters the oracle reads.
interface IL1BlockFees {
    function basefee() external view returns (uint256);
    function blobBaseFee() external view returns (uint256);
    function baseFeeScalar() external view returns (uint32);
    function blobBaseFeeScalar() external view returns (uint32);
    function l1FeeOverhead() external view returns (uint256);
    function l1FeeScalar() external view returns (uint256);
    function operatorFeeScalar() external view returns (uint32);
    function operatorFeeConstant() external view returns (uint64);
}

/// @title GasPriceOracle (tipnode dev chain)
/// @notice tipnode's own GasPriceOracle predeploy
///         (0x420000000000000000000000000000000000000F) for `tipnode dev --op`,
///         written from the OP Stack specification (specs/experimental/contracts/L2/
///         gas-price-oracle.md; fjord/exec-engine.md for the FastLZ size estimate;
///         isthmus and jovian exec-engine.md for the operator fee). Every getter of
///         the Jovian version. Its answers are the fee formulas the chain charges
///         (chain/op/l1cost.go), applied to an UNSIGNED transaction plus 68 bytes
///         for the signature it lacks, with the parameters the L1Block predeploy
///         holds.
///         Storage: slot 0 packs the fork flags isEcotone (offset 0), isFjord (1),
///         isIsthmus (2), isJovian (3), set once each by the depositor account
///         (genesis sets those of the forks active there).
contract GasPriceOracle {
    uint256 public constant DECIMALS = 6;
    string public constant version = "1.6.0";

    address public constant DEPOSITOR_ACCOUNT = 0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001;
    address internal constant L1_BLOCK = 0x4200000000000000000000000000000000000015;

    // Fjord: estimatedSize = max(MIN_TRANSACTION_SIZE * 1e6, COST_INTERCEPT + COST_FASTLZ_COEF * fastlzSize).
    int256 internal constant COST_INTERCEPT = -42_585_600;
    uint256 internal constant COST_FASTLZ_COEF = 836_500;
    uint256 internal constant MIN_TRANSACTION_SIZE = 100;

    bool public isEcotone;
    bool public isFjord;
    bool public isIsthmus;
    bool public isJovian;

    error NotDepositor();
    error ForkOrder();
    error Deprecated();
    error NotFjord();

    function _onlyDepositor() internal view {
        if (msg.sender != DEPOSITOR_ACCOUNT) revert NotDepositor();
    }

    function setEcotone() external {
        _onlyDepositor();
        if (isEcotone) revert ForkOrder();
        isEcotone = true;
    }

    function setFjord() external {
        _onlyDepositor();
        if (!isEcotone || isFjord) revert ForkOrder();
        isFjord = true;
    }

    function setIsthmus() external {
        _onlyDepositor();
        if (!isFjord || isIsthmus) revert ForkOrder();
        isIsthmus = true;
    }

    function setJovian() external {
        _onlyDepositor();
        if (!isIsthmus || isJovian) revert ForkOrder();
        isJovian = true;
    }

    /// @notice The L2 gas price: the block's base fee.
    function gasPrice() public view returns (uint256) {
        return block.basefee;
    }

    function baseFee() public view returns (uint256) {
        return block.basefee;
    }

    /// @notice Bedrock's L1 fee overhead; reverts from Ecotone.
    function overhead() public view returns (uint256) {
        if (isEcotone) revert Deprecated();
        return _l1(IL1BlockFees.l1FeeOverhead.selector);
    }

    /// @notice Bedrock's L1 fee scalar; reverts from Ecotone.
    function scalar() public view returns (uint256) {
        if (isEcotone) revert Deprecated();
        return _l1(IL1BlockFees.l1FeeScalar.selector);
    }

    function l1BaseFee() public view returns (uint256) {
        return _l1(IL1BlockFees.basefee.selector);
    }

    function blobBaseFee() public view returns (uint256) {
        return _l1(IL1BlockFees.blobBaseFee.selector);
    }

    function baseFeeScalar() public view returns (uint32) {
        return uint32(_l1(IL1BlockFees.baseFeeScalar.selector));
    }

    function blobBaseFeeScalar() public view returns (uint32) {
        return uint32(_l1(IL1BlockFees.blobBaseFeeScalar.selector));
    }

    /// @dev One word-sized getter of the L1Block predeploy (a single call
    ///      site keeps the code small enough for the upgrade deposits' gas).
    function _l1(bytes4 _selector) internal view returns (uint256 v_) {
        assembly {
            mstore(0, _selector)
            if iszero(staticcall(gas(), L1_BLOCK, 0, 4, 0, 32)) { revert(0, 0) }
            if lt(returndatasize(), 32) { revert(0, 0) }
            v_ := mload(0)
        }
    }

    function decimals() public pure returns (uint256) {
        return DECIMALS;
    }

    /// @notice The L1 data fee of an unsigned EIP-2718 transaction.
    function getL1Fee(bytes memory _data) external view returns (uint256) {
        if (isFjord) {
            return _fjordL1Cost(_fastLZSize(_data) + 68);
        }
        if (isEcotone) {
            return (_calldataGas(_data) * _feeScaled()) / (16 * 10 ** DECIMALS);
        }
        return ((_calldataGas(_data) + _l1(IL1BlockFees.l1FeeOverhead.selector)) * _l1(IL1BlockFees.basefee.selector) * _l1(IL1BlockFees.l1FeeScalar.selector))
            / 10 ** DECIMALS;
    }

    /// @notice The L1 gas an unsigned transaction is accounted (receipts' l1GasUsed).
    function getL1GasUsed(bytes memory _data) public view returns (uint256) {
        if (isFjord) {
            return (_estimatedSizeScaled(_fastLZSize(_data) + 68) * 16) / 10 ** DECIMALS;
        }
        uint256 gas = _calldataGas(_data);
        if (isEcotone) {
            return gas;
        }
        return gas + _l1(IL1BlockFees.l1FeeOverhead.selector);
    }

    /// @notice An upper bound of the L1 fee of an unsigned transaction of
    ///         _unsignedTxSize bytes: FastLZ's worst case for 99.99% of them.
    function getL1FeeUpperBound(uint256 _unsignedTxSize) external view returns (uint256) {
        if (!isFjord) revert NotFjord();
        uint256 txSize = _unsignedTxSize + 68;
        return _fjordL1Cost(txSize + txSize / 255 + 16);
    }

    /// @notice The operator fee of _gasUsed gas: 0 before Isthmus;
    ///         Isthmus gas * scalar / 1e6 + constant (saturating);
    ///         Jovian gas * scalar * 100 + constant.
    function getOperatorFee(uint256 _gasUsed) external view returns (uint256) {
        if (!isIsthmus) {
            return 0;
        }
        uint256 s = _l1(IL1BlockFees.operatorFeeScalar.selector);
        uint256 c = _l1(IL1BlockFees.operatorFeeConstant.selector);
        if (isJovian) {
            return _gasUsed * s * 100 + c;
        }
        return _saturatingAdd(_saturatingMul(_gasUsed, s) / 1e6, c);
    }

    function _saturatingMul(uint256 a, uint256 b) internal pure returns (uint256) {
        unchecked {
            if (a == 0) return 0;
            uint256 c = a * b;
            return c / a == b ? c : type(uint256).max;
        }
    }

    function _saturatingAdd(uint256 a, uint256 b) internal pure returns (uint256) {
        unchecked {
            uint256 c = a + b;
            return c >= a ? c : type(uint256).max;
        }
    }

    /// @dev 16 * l1BaseFee * baseFeeScalar + blobBaseFee * blobBaseFeeScalar.
    function _feeScaled() internal view returns (uint256) {
        return uint256(_l1(IL1BlockFees.baseFeeScalar.selector)) * 16 * _l1(IL1BlockFees.basefee.selector)
            + uint256(_l1(IL1BlockFees.blobBaseFeeScalar.selector)) * _l1(IL1BlockFees.blobBaseFee.selector);
    }

    function _estimatedSizeScaled(uint256 _fastLZSize_) internal pure returns (uint256) {
        int256 s = COST_INTERCEPT + int256(COST_FASTLZ_COEF * _fastLZSize_);
        int256 min = int256(MIN_TRANSACTION_SIZE * 1e6);
        return uint256(s < min ? min : s);
    }

    function _fjordL1Cost(uint256 _fastLZSize_) internal view returns (uint256) {
        return (_estimatedSizeScaled(_fastLZSize_) * _feeScaled()) / 10 ** (DECIMALS * 2);
    }

    /// @dev Calldata gas (4 per zero byte, 16 per other) plus 68 non-zero
    ///      bytes for the signature.
    function _calldataGas(bytes memory _data) internal pure returns (uint256 total) {
        uint256 n = _data.length;
        unchecked {
            for (uint256 i = 0; i < n; i++) {
                total += _data[i] == 0 ? 4 : 16;
            }
        }
        return total + 68 * 16;
    }

    // FastLZ level 1 compressed length (the spec's fastlz_compress, ariya/FastLZ
    // 344eb40), computed without writing the output, as chain/op/fastlz.go does:
    // a 13-bit hash table of 3-byte sequences; matches within 8191 bytes; the
    // last 12 bytes never searched; literal runs cost 1 byte per 32 plus the
    // bytes, matches 2 or 3 bytes per 262 of length.

    function _read24(bytes memory b, uint256 i) private pure returns (uint256 v) {
        assembly {
            // the 3 bytes at b[i..i+2] as a little-endian integer
            let w := mload(add(add(b, 32), i))
            v := or(or(byte(0, w), shl(8, byte(1, w))), shl(16, byte(2, w)))
        }
    }

    function _hash(uint256 v) private pure returns (uint256) {
        unchecked {
            return (((v * 2654435769) & 0xffffffff) >> 19) & 0x1fff;
        }
    }

    function _literalsLen(uint256 n) private pure returns (uint256 size) {
        size = (n / 32) * 33;
        uint256 r = n % 32;
        if (r > 0) size += 1 + r;
    }

    function _matchLen(uint256 l) private pure returns (uint256 size) {
        unchecked {
            while (l > 262) {
                size += 3;
                l -= 262;
            }
            return l < 7 ? size + 2 : size + 3;
        }
    }

    /// @dev The search from ip: the next position whose 3 bytes match an
    ///      earlier position within range (seq; ref the earlier one), and
    ///      ip_ one past it; found false when the search reached ipLimit.
    function _search(bytes memory data, uint256[] memory htab, uint256 ip, uint256 ipLimit)
        private
        pure
        returns (uint256 ip_, uint256 ref, uint256 seq, bool found)
    {
        // In assembly (the hot loop: one pass per input byte): s the 3
        // bytes at ip, little-endian; h their 13-bit hash; the table entry
        // swapped for ip (h < 8192: no bounds check needed).
        assembly {
            let base := add(data, 32)
            let tab := add(htab, 32)
            for {} 1 {} {
                let w := mload(add(base, ip))
                let s := or(or(byte(0, w), shl(8, byte(1, w))), shl(16, byte(2, w)))
                let slot := add(tab, shl(5, and(shr(19, and(mul(s, 2654435769), 0xffffffff)), 0x1fff)))
                ref := mload(slot)
                mstore(slot, ip)
                let r := mload(add(base, ref))
                let matched := and(lt(sub(ip, ref), 8192), eq(or(or(byte(0, r), shl(8, byte(1, r))), shl(16, byte(2, r))), s))
                seq := ip
                if iszero(lt(ip, ipLimit)) { break }
                ip := add(ip, 1)
                if matched {
                    found := 1
                    break
                }
            }
            ip_ := ip
        }
    }

    /// @dev The match length field at ip against ref: the bytes after the
    ///      first 3 that agree, plus the first that differs (or up to ipBound).
    function _extent(bytes memory data, uint256 ref, uint256 ip, uint256 ipBound) private pure returns (uint256 l) {
        unchecked {
            uint256 p = ref + 3;
            for (uint256 q = ip + 3; q < ipBound; q++) {
                l++;
                if (data[p] != data[q]) break;
                p++;
            }
        }
    }

    function _fastLZSize(bytes memory data) internal pure returns (uint256 size) {
        uint256 n = data.length;
        uint256 anchor = 0;
        if (n > 15) {
            uint256[] memory htab = new uint256[](8192);
            uint256 ipLimit = n - 13;
            uint256 ip = 2;
            unchecked {
                while (ip < ipLimit) {
                    (uint256 next, uint256 ref, uint256 seq, bool found) = _search(data, htab, ip, ipLimit);
                    if (!found || next >= ipLimit) break;
                    ip = seq;
                    if (ip > anchor) size += _literalsLen(ip - anchor);
                    uint256 l = _extent(data, ref, ip, n - 4);
                    size += _matchLen(l);
                    ip += l;
                    htab[_hash(_read24(data, ip))] = ip;
                    ip++;
                    htab[_hash(_read24(data, ip))] = ip;
                    ip++;
                    anchor = ip;
                }
            }
        }
        return size + _literalsLen(n - anchor);
    }
}
