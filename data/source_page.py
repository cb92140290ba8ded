"""What a page source (data/io.py: images, PDF text layers, OFD, invoice XML) hands the pipeline for each
page: the page image (or how to draw it) and, where the text was read from the file itself, the page's
lines and the strokes the file draws."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from data.document import Page


@dataclass
class SourcePage:
    """One page from a page source: `image` (BGR uint8, upright) and, when the text was read from the
    file, `page` with its lines (else None: OCR reads `image`). `seconds` is the time spent reading the
    text from the file (the pipeline reports it as the "text_layer" stage, not as decoding); `embedded` the
    field values the file states for this page (data.embedded.EmbeddedRecord), empty for most pages.

    A page read from the file need not be drawn at all (a batch over born-digital invoices looks at no
    picture): its `image` may be None and `render` draw it when asked (`picture`), while the page source
    is still on this page (data.io keeps a PDF open until the next page is asked for). `segments`: the
    straight strokes the file draws on the page, (x0, y0, x1, y1, width) in page pixels (data.pdf_paths,
    data.ofd), from which its ruled lines are found without a picture; None when they are not the whole
    picture (a large image on the page) or unknown, and the ruled lines are looked for in the image.
    `pictures` (data.pdf_paths.Picture): large images on a page read from its text, whose own text only OCR
    can read (a scan pasted under a typed caption, a form printed as a background picture)."""
    image: np.ndarray | None
    page: Page | None = None
    seconds: float = 0.0
    embedded: list[Any] = field(default_factory=list)
    render: Callable[[], np.ndarray] | None = None
    segments: Sequence[Sequence[float]] | None = None
    pictures: list[Any] = field(default_factory=list)

    def picture(self) -> np.ndarray:
        """The page image: `image`, or drawn now by `render` (and kept)."""
        if self.image is None:
            if self.render is None:
                raise ValueError("the page source gave neither an image nor a way to draw it")
            self.image = self.render()
        return self.image


def as_source_page(item: Any) -> Any:
    """What a page source yields as a SourcePage: a bare image (BGR array or PIL image) becomes one for OCR;
    a SourcePage and None (the source is done) stay as they are."""
    return item if item is None or isinstance(item, SourcePage) else SourcePage(item)
