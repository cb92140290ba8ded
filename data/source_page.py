"""What a page source (data/io.py: images, PDF text layers, OFD, invoice XML) hands the pipeline for each
page: the page image and, where the text was read from the file itself, the page's lines."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from data.document import Page


@dataclass
class SourcePage:
    """One page from a page source: `image` (BGR uint8, upright) and, when the text was read from the
    file, `page` with its lines (else None: OCR reads `image`). `seconds` is the time spent reading the
    text from the file (the pipeline reports it as the "text_layer" stage, not as decoding); `embedded` the
    field values the file states for this page (data.embedded.EmbeddedRecord), empty for most pages."""
    image: np.ndarray
    page: Page | None = None
    seconds: float = 0.0
    embedded: list[Any] = field(default_factory=list)
