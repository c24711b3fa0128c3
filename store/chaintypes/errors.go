package chaintypes

import "errors"

var (
	// ErrDepositDecode is a deposit transaction whose encoding is malformed.
	ErrDepositDecode = errors.New("invalid deposit transaction encoding")
	// ErrTxDecode is a transaction whose encoding is malformed or empty.
	ErrTxDecode = errors.New("invalid transaction encoding")
	// ErrReceiptDecode is a stored receipt whose encoding is malformed.
	ErrReceiptDecode = errors.New("invalid stored receipt encoding")
)
