"""Models: the OCR engine wrapper, the layout-aware encoder, extractor heads, tokenizer, checkpoint import."""
