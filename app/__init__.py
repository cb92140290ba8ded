"""Command-line and UI entry points: OCR, extraction, batch processing, the Streamlit app."""
