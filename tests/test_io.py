"""data/io.py: every accepted format decodes to BGR pages; every bad input raises InputError naming the file."""
from __future__ import annotations

import io
import struct
import types
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import data.io as dio
from data.io import InputError, iter_pages, load_image_bytes, load_pages, page_count


def _page(w: int = 64, h: int = 48, colour=(200, 30, 10)) -> Image.Image:
    return Image.new("RGB", (w, h), colour)


def _pdf_blank(path: Path, n: int, size=(200, 300)) -> Path:
    import pypdfium2 as pdfium
    pdf = pdfium.PdfDocument.new()
    for _ in range(n):
        pdf.new_page(*size)
    pdf.save(str(path))
    pdf.close()
    return path


def _pdf_from_objects(objects: list[bytes], trailer_extra: bytes = b"") -> bytes:
    """A PDF with a correct xref table, from object bodies numbered 1..n."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer_extra, xref)
    return bytes(out)


def _png_header_only(w: int, h: int) -> bytes:
    """A PNG signature and IHDR claiming w x h, plus one tiny IDAT: a pixel bomb by its header."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
            + chunk(b"IEND", b""))


# --- good inputs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,ext", [("JPEG", "jpg"), ("PNG", "png"), ("BMP", "bmp"), ("WEBP", "webp"),
                                     ("TIFF", "tif")])
def test_each_image_format_decodes_to_bgr(tmp_path, fmt, ext):
    path = tmp_path / f"p.{ext}"
    _page(colour=(200, 30, 10)).save(path, fmt, **({"quality": 95} if fmt in ("JPEG", "WEBP") else {}))
    [page] = load_pages(path)
    assert page.shape == (48, 64, 3) and page.dtype == np.uint8
    b, g, r = page[24, 32].astype(int)
    assert abs(r - 200) < 12 and abs(g - 30) < 12 and abs(b - 10) < 12    # BGR order, not RGB


def test_multipage_tiff_gives_every_frame(tmp_path):
    path = tmp_path / "scan.tiff"
    frames = [_page(colour=(c, c, c)) for c in (10, 120, 250)]
    frames[0].save(path, save_all=True, append_images=frames[1:])
    pages = load_pages(path)
    assert [int(p[0, 0, 0]) for p in pages] == [10, 120, 250]
    assert page_count(path) == 3
    assert [int(p[0, 0, 0]) for p in load_pages(path, page_range=(1, 3))] == [120, 250]


def test_wrong_extension_is_sniffed_by_content(tmp_path):
    path = tmp_path / "really_a_png.jpg"
    _page(colour=(0, 255, 0)).save(path, "PNG")
    [page] = load_pages(path)
    assert tuple(page[0, 0]) == (0, 255, 0)


def test_transparent_png_reads_as_white_paper(tmp_path):
    path = tmp_path / "alpha.png"
    Image.new("RGBA", (8, 8), (0, 0, 0, 0)).save(path)
    assert load_pages(path)[0].min() == 255


def test_pdf_pages_render_at_the_requested_dpi(tmp_path):
    path = _pdf_blank(tmp_path / "two.pdf", 2, size=(144, 72))      # 2 x 1 inch
    pages = load_pages(path, dpi=100)
    assert len(pages) == 2 and pages[0].shape == (100, 200, 3) and pages[0].min() == 255
    assert load_pages(path, dpi=200)[0].shape == (200, 400, 3)


def test_iter_pages_is_lazy_for_long_pdfs(tmp_path):
    path = _pdf_blank(tmp_path / "long.pdf", 300)
    pages = iter_pages(path, dpi=72)
    assert isinstance(pages, types.GeneratorType)
    first = next(pages)
    assert first.shape == (300, 200, 3)
    assert sum(1 for _ in pages) == 299


def test_upload_bytes_decode_like_files(tmp_path):
    buf = io.BytesIO()
    _page().save(buf, "PNG")
    [page] = load_image_bytes(buf.getvalue(), "upload.png")
    assert page.shape == (48, 64, 3)
    pdf = _pdf_blank(tmp_path / "u.pdf", 3).read_bytes()
    assert len(load_image_bytes(pdf, "u.pdf", dpi=72)) == 3


# --- bad inputs ----------------------------------------------------------------------------------------

def _refused(path, match: str, **kw) -> InputError:
    with pytest.raises(InputError, match=match) as info:
        load_pages(path, **kw)
    assert str(path) in str(info.value) and info.value.path == str(path)
    assert isinstance(info.value, ValueError)
    return info.value


def test_zero_byte_file(tmp_path):
    path = tmp_path / "empty.jpg"
    path.write_bytes(b"")
    _refused(path, "empty")


def test_truncated_jpeg(tmp_path):
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (200, 200, 3), dtype=np.uint8)).save(buf, "JPEG")
    path = tmp_path / "cut.jpg"
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    _refused(path, "truncated|cannot decode")


def test_corrupt_png_body(tmp_path):
    buf = io.BytesIO()
    _page().save(buf, "PNG")
    data = bytearray(buf.getvalue())
    data[40:80] = b"\xff" * 40                      # smash the IDAT stream, keep the signature
    path = tmp_path / "bad.png"
    path.write_bytes(bytes(data))
    _refused(path, "corrupt|cannot decode")


def test_text_file_named_jpg(tmp_path):
    path = tmp_path / "notes.jpg"
    path.write_text("发票 invoice notes, not a picture\n", encoding="utf-8")
    _refused(path, "looks like text")


def test_unknown_binary(tmp_path):
    path = tmp_path / "blob.png"
    path.write_bytes(bytes(range(256)) * 4)
    _refused(path, "not a JPEG, PNG")


def test_png_pixel_bomb_refused_from_header(tmp_path, monkeypatch):
    path = tmp_path / "bomb.png"
    path.write_bytes(_png_header_only(30000, 30000))
    # Decoding 30000 x 30000 would need 2.7 GB; prove nothing is decoded by failing any load().
    monkeypatch.setattr(Image.Image, "load", lambda self: pytest.fail("pixels decoded"))
    _refused(path, "pixels")


def test_max_pixels_is_a_parameter(tmp_path):
    path = tmp_path / "p.png"
    _page(100, 100).save(path)
    _refused(path, "10,000 pixels, above the limit of 5,000", max_pixels=5_000)


def test_pdf_with_thousands_of_pages_refused_unless_ranged(tmp_path):
    path = _pdf_blank(tmp_path / "huge.pdf", 3000, size=(20, 20))
    err = _refused(path, "3000 pages")
    assert "page_range" in err.reason
    assert len(load_pages(path, dpi=72, page_range=(2998, 3000))) == 2
    assert page_count(path) == 3000


def test_page_range_outside_document(tmp_path):
    path = _pdf_blank(tmp_path / "two.pdf", 2)
    _refused(path, "outside", page_range=(5, 7))


def test_encrypted_pdf(tmp_path):
    # Standard security handler (RC4, R2) whose /U does not match the empty password: pdfium must
    # ask for a password, as for any PDF with a user password.
    encrypt = (b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 "
               b"/O <" + b"11" * 32 + b"> /U <" + b"22" * 32 + b"> >>")
    body = _pdf_from_objects([b"<< /Type /Catalog /Pages 2 0 R >>",
                              b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                              b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >>",
                              encrypt],
                             trailer_extra=b"/Encrypt 4 0 R /ID [<" + b"ab" * 16 + b"> <" + b"ab" * 16 + b">] ")
    path = tmp_path / "locked.pdf"
    path.write_bytes(body)
    _refused(path, "encrypted")


def test_broken_pdf(tmp_path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage without xref or pages")
    _refused(path, "broken|no pages")


def test_missing_path_and_directory(tmp_path):
    _refused(tmp_path / "nope.png", "no such file")
    _refused(tmp_path, "is a directory")


def test_unreadable_path(tmp_path, monkeypatch):
    path = tmp_path / "secret.png"
    _page().save(path)
    path.chmod(0)

    # root ignores file modes, so make the denial explicit at the one place data.io opens files
    def deny(*args, **kw):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(dio, "open", deny, raising=False)
    _refused(path, "permission denied")


def test_bad_upload_bytes_name_the_upload():
    with pytest.raises(InputError, match=r"^scan\.pdf: .*empty"):
        load_image_bytes(b"", "scan.pdf")
    with pytest.raises(InputError, match=r"^x\.jpg: .*text"):
        load_image_bytes(b"hello world", "x.jpg")


def test_pdf_colours_come_out_bgr(tmp_path):
    path = tmp_path / "red.pdf"
    _page(72, 72, colour=(255, 0, 0)).save(path, "PDF", resolution=72)
    [page] = load_pages(path, dpi=72)
    b, g, r = page[36, 36].astype(int)
    assert r > 240 and g < 15 and b < 15


def test_zero_page_pdf_says_it_has_no_pages(tmp_path):
    path = _pdf_blank(tmp_path / "empty.pdf", 0)
    err = _refused(path, "PDF has no pages")
    assert "PDFium: Success" not in str(err)
    with pytest.raises(InputError, match="PDF has no pages"):
        load_image_bytes(path.read_bytes(), "empty.pdf")


def test_symlink_loop_and_dangling_link_are_named(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    a.symlink_to(b)
    b.symlink_to(a)
    err = _refused(a, "symbolic link loop")
    assert "no such file" not in str(err)
    dangling = tmp_path / "scan.png"
    dangling.symlink_to(tmp_path / "moved-away.png")
    err = _refused(dangling, "dangling symbolic link")
    assert "moved-away.png" in str(err)
    _refused(tmp_path / "plain-typo.png", "no such file")


def test_too_large_advice_depends_on_the_kind(tmp_path, monkeypatch):
    png, pdf = tmp_path / "photo.png", _pdf_blank(tmp_path / "scan.pdf", 1)
    _page(400, 300).save(png)
    monkeypatch.setattr(dio, "MAX_FILE_BYTES", 100)
    err = _refused(png, "above the .* limit")
    assert "downscale the PNG" in str(err) and "split" not in str(err)
    assert "split the PDF" in str(_refused(pdf, "above the .* limit"))
    with pytest.raises(InputError, match="downscale the PNG") as info:
        load_image_bytes(png.read_bytes(), "photo.png")
    assert "split" not in str(info.value)


def test_fifo_device_and_socket_are_refused_without_being_read(tmp_path):
    """A FIFO blocks the reader until someone writes, /dev/zero never ends: both are refused from
    their type (an open with O_NONBLOCK and fstat), before any byte is read."""
    import os
    import socket
    import threading
    fifo, zero, sock_path = tmp_path / "pipe.png", tmp_path / "zero.pdf", tmp_path / "sock.jpg"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    reasons: dict[str, str] = {}

    def probe() -> None:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(sock_path))
            for path in (fifo, zero, sock_path):
                for call in (dio.check_file, iter_pages, page_count):
                    with pytest.raises(InputError) as info:
                        call(path)
                    reasons[f"{path.name}:{call.__name__}"] = info.value.reason
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "blocked on a FIFO or a device"
    assert len(reasons) == 9
    assert all("is a FIFO (named pipe), not a regular file" in r for k, r in reasons.items() if k.startswith("pipe"))
    assert all("a character device (a symbolic link to '/dev/zero')" in r
               for k, r in reasons.items() if k.startswith("zero"))
    assert all("is a socket" in r for k, r in reasons.items() if k.startswith("sock"))


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_atomic_writes_give_the_mode_a_plain_open_gives(tmp_path, umask, expected):
    """tempfile.mkstemp makes 0600 files; renamed into place they were unreadable to the group and to
    a service account whatever the umask. Now: 0666 less the umask, as open() does, also when an
    existing file is replaced."""
    import os

    from data.atomic import write_bytes_atomic, write_text_atomic
    old = os.umask(umask)
    try:
        with open(tmp_path / "plain", "w") as fh:
            fh.write("x")
        write_text_atomic(tmp_path / "a.json", "{}")
        write_bytes_atomic(tmp_path / "b.png", b"png")
        (tmp_path / "c.csv").write_text("old")
        os.chmod(tmp_path / "c.csv", 0o600)                 # left 0600 by an older version: repaired
        write_text_atomic(tmp_path / "c.csv", "new")
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes == {"plain": expected, "a.json": expected, "b.png": expected, "c.csv": expected}
