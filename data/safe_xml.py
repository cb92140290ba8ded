"""XML from files we are handed, parsed safely: no DOCTYPE or ENTITY declaration is accepted (so no entity is
ever expanded or fetched), and a size limit. The one parser of the OFD reader (data/ofd.py) and the invoice
XML reader (data/invoice_xml.py)."""
from __future__ import annotations

import re
from xml.etree import ElementTree as ET

from data.input_error import InputError

MAX_XML_BYTES = 8 * 1024 * 1024    # an invoice XML is 5-50 KB; a railway XBRL under 100 KB


def looks_like_xml(head: bytes) -> bool:
    """True when a file's first bytes start an XML document (after a BOM and blanks)."""
    body = head.lstrip(b"\xef\xbb\xbf").lstrip()
    return body.startswith(b"<?xml") or (body.startswith(b"<") and body[1:2].isalpha())


def parse_xml(data: bytes, name: str, member: str = "", kind: str = "OFD") -> ET.Element:
    """XML without a DOCTYPE or ENTITY declaration (refused: no entity is ever expanded or fetched).
    `kind` names the file in the message for XML that is not well-formed ("damaged OFD: ...")."""
    where = f" ({member})" if member else ""
    head = data.lstrip(b"\xef\xbb\xbf")
    if re.search(rb"<!\s*(DOCTYPE|ENTITY)", head, re.IGNORECASE):
        raise InputError(name, f"XML{where} declares a DOCTYPE or entities; refused (such XML can read local "
                               "files or expand into gigabytes)")
    try:
        return ET.fromstring(head)
    except ET.ParseError as exc:
        raise InputError(name, f"damaged {kind}: XML{where} is not well-formed ({exc})") from None
