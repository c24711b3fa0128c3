// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

/// @title OperatorFeeVault (tipnode)
/// @notice tipnode's own OperatorFeeVault implementation
///         (proxy 0x420000000000000000000000000000000000001B), written from the
///         OP Stack specification (specs/protocol/isthmus/derivation.md, "Operator
///         fee vault deployment"; predeploys.md, FeeVault): the vault the Isthmus
///         network-upgrade deposits deploy, with the spec's fixed arguments:
///         recipient the BaseFeeVault, minimum withdrawal 0, withdrawal network
///         L2. The execution rules credit the operator fee to the vault's
///         balance directly; withdraw() sends the whole balance to the
///         recipient on L2. Storage: slot 0 totalProcessed (as FeeVault).
contract OperatorFeeVault {
    string public constant version = "1.0.0";

    /// @notice The BaseFeeVault.
    address public constant RECIPIENT = 0x4200000000000000000000000000000000000019;
    uint256 public constant MIN_WITHDRAWAL_AMOUNT = 0;
    /// @notice WithdrawalNetwork.L2 (L1 is 0).
    uint8 public constant WITHDRAWAL_NETWORK = 1;

    /// @notice The total amount of ether sent to the recipient.
    uint256 public totalProcessed;

    event Withdrawal(uint256 value, address to, address from);
    event Withdrawal(uint256 value, address to, address from, uint8 withdrawalNetwork);

    receive() external payable {}

    function recipient() external pure returns (address) {
        return RECIPIENT;
    }

    function minWithdrawalAmount() external pure returns (uint256) {
        return MIN_WITHDRAWAL_AMOUNT;
    }

    function withdrawalNetwork() external pure returns (uint8) {
        return WITHDRAWAL_NETWORK;
    }

    /// @notice Sends the vault's balance to the recipient on L2.
    function withdraw() external returns (uint256 value_) {
        value_ = address(this).balance;
        totalProcessed += value_;
        emit Withdrawal(value_, RECIPIENT, msg.sender);
        emit Withdrawal(value_, RECIPIENT, msg.sender, WITHDRAWAL_NETWORK);
        (bool ok,) = RECIPIENT.call{value: value_}("");
        require(ok, "FeeVault: failed to send ETH to L2 fee recipient");
    }
}
