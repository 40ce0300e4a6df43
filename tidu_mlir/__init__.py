"""tidu-mlir: an automatic-differentiation compiler built on xDSL."""
