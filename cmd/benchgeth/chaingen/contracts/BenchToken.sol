// SPDX-License-Identifier: MIT
// BenchToken: the ERC-20 of tipnode's benchmark chain (cmd/benchgeth).
//
// Storage layout is fixed so the chain generator can write balances straight
// into the genesis alloc: balanceOf is the mapping at slot 0 (a holder's
// balance lives at keccak256(pad32(holder) ++ pad32(0))), totalSupply is
// slot 1. There is no constructor: the runtime code is placed in the genesis.
//
// Besides transfer and balanceOf it has two functions that exist only to be
// called by the benchmark:
//   - heavy(holders): an EVM-heavy view. One SLOAD per holder (50 holders =
//     50 SLOADs) and three 512-bit mulDivs per holder (150 for 50), two of
//     which take the full-width path.
//   - fail(code): always reverts with a reason string.
pragma solidity 0.8.30;

contract BenchToken {
    mapping(address => uint256) public balanceOf; // slot 0
    uint256 public totalSupply; // slot 1

    event Transfer(address indexed from, address indexed to, uint256 value);

    function decimals() external pure returns (uint8) {
        return 18;
    }

    function transfer(address to, uint256 value) external returns (bool) {
        uint256 have = balanceOf[msg.sender];
        require(have >= value, "BenchToken: transfer amount exceeds balance");
        unchecked {
            balanceOf[msg.sender] = have - value;
        }
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }

    // A number that makes b * BIG overflow 256 bits for any b >= 2, so the
    // second and third mulDiv of heavy take the 512-bit path.
    uint256 private constant BIG = 0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffed;

    function heavy(address[] calldata holders) external view returns (uint256 acc) {
        for (uint256 i = 0; i < holders.length; i++) {
            uint256 b = balanceOf[holders[i]];
            uint256 x1 = mulDiv(b, 997, 1000);
            uint256 x2 = mulDiv(b + 1, BIG, 1e36);
            uint256 x3 = mulDiv(x2, x1 | 1, 1e40 + i);
            acc += x3;
        }
    }

    function fail(uint256 code) external pure {
        revert(code % 2 == 0 ? "BenchToken: even code refused" : "BenchToken: odd code refused");
    }

    // mulDiv returns floor(a * b / d) with the product taken at full 512-bit
    // width; it reverts when the quotient does not fit 256 bits or d == 0.
    //
    // The product is [hi lo] (two 256-bit words): lo = a*b mod 2^256 and
    // hi comes from a*b mod (2^256 - 1) by the Chinese remainder theorem.
    // When hi == 0 it is one division. Otherwise the remainder a*b mod d is
    // subtracted so the division is exact, the power of two in d is divided
    // out of d and of [hi lo] (folding hi's low bits into lo), and the exact
    // quotient of the now odd d is lo times d's inverse modulo 2^256,
    // found by Newton's iteration (each step doubles the correct low bits:
    // 4 -> 8 -> ... -> 256).
    function mulDiv(uint256 a, uint256 b, uint256 d) internal pure returns (uint256 q) {
        uint256 lo;
        uint256 hi;
        assembly {
            let m := mulmod(a, b, not(0))
            lo := mul(a, b)
            hi := sub(sub(m, lo), lt(m, lo))
        }
        require(d > hi, "mulDiv: quotient overflows");
        if (hi == 0) {
            return lo / d;
        }
        unchecked {
            uint256 r = mulmod(a, b, d);
            assembly {
                hi := sub(hi, gt(r, lo))
                lo := sub(lo, r)
            }
            uint256 twos = d & (0 - d);
            assembly {
                d := div(d, twos)
                lo := div(lo, twos)
                // 2^256 / twos, computed without overflowing
                let up := add(div(sub(0, twos), twos), 1)
                lo := or(lo, mul(hi, up))
            }
            uint256 inv = (3 * d) ^ 2;
            for (uint256 k = 0; k < 6; k++) {
                inv *= 2 - d * inv;
            }
            q = lo * inv;
        }
    }
}
