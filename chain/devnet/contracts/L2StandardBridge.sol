// SPDX-License-Identifier: MIT
pragma solidity 0.8.30;

interface IL2Messenger {
    function sendMessage(address _target, bytes calldata _message, uint32 _minGasLimit) external payable;
}

/// @title L2StandardBridge (tipnode dev chain)
/// @notice tipnode's own L2StandardBridge predeploy
///         (0x4200000000000000000000000000000000000010) for `tipnode dev --op`,
///         written from the OP Stack specification (specs/protocol/bridges.md):
///         the L2 -> L1 half, for ether. withdraw/withdrawTo (with the legacy
///         ether token 0xDeadDeAddeAddEAddeadDEaDDEAdDeaDDeAD0000), bridgeETH,
///         bridgeETHTo and a plain transfer from an externally owned account send
///         a finalizeBridgeETH message to the L1 bridge through the
///         L2CrossDomainMessenger, which records the withdrawal in the
///         L2ToL1MessagePasser; they emit WithdrawalInitiated and
///         ETHBridgeInitiated. The dev chain has no L1 and no bridged ERC-20
///         tokens: a token withdrawal reverts (OnlyEther), and nothing finalizes
///         on L1.
contract L2StandardBridge {
    string public constant version = "1.11.1";
    address public constant LEGACY_ERC20_ETH = 0xDeadDeAddeAddEAddeadDEaDDEAdDeaDDeAD0000;
    /// @notice The L1 bridge: on the dev chain a fixed placeholder (0x...b41d).
    address public constant OTHER_BRIDGE = 0x000000000000000000000000000000000000B41D;
    IL2Messenger public constant MESSENGER = IL2Messenger(0x4200000000000000000000000000000000000007);
    uint32 internal constant RECEIVE_DEFAULT_GAS_LIMIT = 200_000;

    event WithdrawalInitiated(
        address indexed l1Token, address indexed l2Token, address indexed from, address to, uint256 amount, bytes extraData
    );
    event ETHBridgeInitiated(address indexed from, address indexed to, uint256 amount, bytes extraData);

    error OnlyEOA();
    error OnlyEther();
    error ValueMismatch();

    modifier onlyEOA() {
        if (msg.sender.code.length != 0 || msg.sender != tx.origin) revert OnlyEOA();
        _;
    }

    function messenger() external pure returns (address) {
        return address(MESSENGER);
    }

    function otherBridge() external pure returns (address) {
        return OTHER_BRIDGE;
    }

    function l1TokenBridge() external pure returns (address) {
        return OTHER_BRIDGE;
    }

    receive() external payable onlyEOA {
        _withdrawETH(msg.sender, msg.sender, msg.value, RECEIVE_DEFAULT_GAS_LIMIT, bytes(""));
    }

    function withdraw(address _l2Token, uint256 _amount, uint32 _minGasLimit, bytes calldata _extraData)
        external
        payable
        onlyEOA
    {
        _withdraw(_l2Token, msg.sender, _amount, _minGasLimit, _extraData);
    }

    function withdrawTo(address _l2Token, address _to, uint256 _amount, uint32 _minGasLimit, bytes calldata _extraData)
        external
        payable
    {
        _withdraw(_l2Token, _to, _amount, _minGasLimit, _extraData);
    }

    function bridgeETH(uint32 _minGasLimit, bytes calldata _extraData) external payable onlyEOA {
        _withdrawETH(msg.sender, msg.sender, msg.value, _minGasLimit, _extraData);
    }

    function bridgeETHTo(address _to, uint32 _minGasLimit, bytes calldata _extraData) external payable {
        _withdrawETH(msg.sender, _to, msg.value, _minGasLimit, _extraData);
    }

    function _withdraw(address _l2Token, address _to, uint256 _amount, uint32 _minGasLimit, bytes calldata _extraData)
        internal
    {
        if (_l2Token != LEGACY_ERC20_ETH) revert OnlyEther();
        if (msg.value != _amount) revert ValueMismatch();
        _withdrawETH(msg.sender, _to, _amount, _minGasLimit, _extraData);
    }

    function _withdrawETH(address _from, address _to, uint256 _amount, uint32 _minGasLimit, bytes memory _extraData)
        internal
    {
        emit WithdrawalInitiated(address(0), LEGACY_ERC20_ETH, _from, _to, _amount, _extraData);
        emit ETHBridgeInitiated(_from, _to, _amount, _extraData);
        MESSENGER.sendMessage{ value: _amount }(
            OTHER_BRIDGE,
            abi.encodeWithSignature("finalizeBridgeETH(address,address,uint256,bytes)", _from, _to, _amount, _extraData),
            _minGasLimit
        );
    }
}
