package op

import "errors"

// Sentinel errors of the op package. Every returned error wraps one of these
// with the field or value that was wrong; callers match them with errors.Is.
var (
	// ErrConfig: the chain config's OP part is unusable (bad JSON, a fork
	// out of order, a zero EIP-1559 parameter, an L1 fork time that
	// contradicts the OP fork it stands for).
	ErrConfig = errors.New("invalid OP chain config")
	// ErrExtraData: a header's extraData does not have the form its fork
	// requires (Holocene / Jovian EIP-1559 parameters, empty before).
	ErrExtraData = errors.New("invalid extraData")
	// ErrL1Info: L1-attributes deposit calldata that no known encoding
	// (Bedrock, Ecotone, Isthmus, Jovian) describes.
	ErrL1Info = errors.New("invalid L1 attributes calldata")
	// ErrDAFootprint: a block's DA footprint cannot be computed (no
	// L1-attributes deposit first, a user transaction in the Jovian
	// activation block), exceeds the gas limit, or a header's blobGasUsed /
	// excessBlobGas differ from what its fork requires.
	ErrDAFootprint = errors.New("invalid DA footprint")
	// ErrActivationBlock: a user (sequenced) transaction in a fork
	// activation block that holds deposits only (Karst).
	ErrActivationBlock = errors.New("invalid fork activation block")
	// ErrPrecompileInput: an OP precompile refused an input longer than its
	// fork's limit. Like every precompile error it consumes the call's gas.
	ErrPrecompileInput = errors.New("precompile input too long")
)
