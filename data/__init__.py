"""Data: the Document result shape, document schemas, validators, the synthetic generator, dataset formats."""
