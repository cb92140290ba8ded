"""Locate CJK fonts installed from Debian packages (fonts-noto-cjk, fonts-wqy-*, fonts-arphic-*).

Fonts are grouped by style, because invoices and ID cards mix them: hei (sans), song (serif/ming),
kai (brush) and fangsong. `scripts/setup.sh` installs the packages; when none is found the error says
exactly that, instead of rendering tofu boxes.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

FONT_DIRS = ["/usr/share/fonts", "/usr/local/share/fonts", os.path.expanduser("~/.fonts")]

# file-name fragment -> (style, face index inside a .ttc that holds Simplified Chinese)
_KNOWN: dict[str, tuple[str, int]] = {
    "NotoSansCJK-Regular.ttc": ("hei", 2),       # faces: JP, KR, SC, TC, HK -> 2 is SC
    "NotoSansCJK-Bold.ttc": ("hei_bold", 2),
    "NotoSerifCJK-Regular.ttc": ("song", 2),
    "NotoSerifCJK-Bold.ttc": ("song_bold", 2),
    "wqy-zenhei.ttc": ("hei", 0),
    "wqy-microhei.ttc": ("hei", 0),
    "uming.ttc": ("song", 0),
    "gbsn00lp.ttf": ("song", 0),
    "ukai.ttc": ("kai", 0),
    "gkai00mp.ttf": ("kai", 0),
    "simfang.ttf": ("fangsong", 0),
    "FangSong.ttf": ("fangsong", 0),
}

STYLES = ("hei", "song", "kai", "fangsong", "hei_bold", "song_bold")


class FontNotFoundError(RuntimeError):
    pass


@functools.lru_cache(maxsize=1)
def available_fonts() -> dict[str, list[tuple[str, int]]]:
    """{style: [(path, face_index), ...]} for every known CJK font on this machine, sorted by path."""
    found: dict[str, list[tuple[str, int]]] = {}
    for root in FONT_DIRS:
        if not os.path.isdir(root):
            continue
        for path in sorted(Path(root).rglob("*")):
            info = _KNOWN.get(path.name)
            if info:
                found.setdefault(info[0], []).append((str(path), info[1]))
    if not found:
        raise FontNotFoundError(
            "No CJK font found under " + ", ".join(FONT_DIRS) + ". Install them with "
            "`bash scripts/setup.sh` (Debian packages fonts-noto-cjk fonts-wqy-zenhei fonts-arphic-ukai ...).")
    # fangsong has no free Debian package; kai is the closest look, so it stands in.
    if "fangsong" not in found and "kai" in found:
        found["fangsong"] = found["kai"]
    return found


def font_for(style: str = "hei") -> tuple[str, int]:
    """(path, face index) of a font of the given style, falling back to any CJK font."""
    fonts = available_fonts()
    for s in (style, style.split("_")[0], "hei", "song"):
        if fonts.get(s):
            return fonts[s][0]
    return next(iter(fonts.values()))[0]


@functools.lru_cache(maxsize=256)
def pil_font(style: str = "hei", size: int = 24):
    """A cached PIL ImageFont of the style and pixel size."""
    from PIL import ImageFont
    path, index = font_for(style)
    return ImageFont.truetype(path, size=size, index=index)
