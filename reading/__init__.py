"""The reading route: a file (or uploaded bytes) in, one extracted and validated `Document` per document
in it out. It is the one way the project reads a document, so what the app shows, what evaluation scores
and what a benchmark measures is the same reading.

    decode      data/io.py: limits, every page of a PDF / OFD / multi-page TIFF / XML, one page at a time
    read        per page: the file's own text where it can be trusted (a PDF's text layer, an OFD's text
                objects, an invoice XML: data/textlayer.py, data/ofd.py, data/invoice_xml.py), else OCR
                (models/ocr: PP-OCR det, angle, rec); `Page.reader` says which
    split       which pages make one document (route.py "documents in a file")
    extract     per document, from its own pages only (models/extractor: doc type, fields, items, pairs,
                validation warnings; data/embedded.py: what the file states about its fields)

`reading.route` holds the route (`analyse_file`, `analyse_bytes`, `analyse_pages` -> `Analysis`; `PageReader`
and `read_file_pages`: decode and read without extraction) and the models it loads once per process
(`load_extractor`, `warm_up`). `reading.cache.read_pages_cached` is the one read cache: each file's pages read
once by the route and kept in a JSONL file keyed by the reader's settings (OCR settings, reader mode), for
training, evaluation, retraining and the benchmarks, which extract from them again. It stands between the
floors: it imports data/ and models/ only; the app (CLI, batch, UI, serve), training and the benchmarks call it.
"""
