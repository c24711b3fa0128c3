package node

import "errors"

// ErrConfig: a node Config value is invalid (the component configs have
// their own sentinels).
var ErrConfig = errors.New("invalid node configuration")
