"""Turn values as printed on Chinese documents into canonical strings.

- dates (2024年3月5日, 2024-03-05, 2024/3/5, 2024.3.5, 20240305, 二〇二四年三月五日) -> ISO 8601 "2024-03-05"
- amounts (¥1,234.50, ￥1234.5, 1234.5元) -> decimal strings with two places "1234.50"
- 大写金额 (壹万贰仟叁佰肆拾伍圆陆角柒分 / ...圆整) <-> Decimal, in the style invoices print
- codes (full-width digits and letters, spaces) -> half-width, no spaces, upper case

Every parser returns None when the text cannot be read as that type; callers decide whether that is an
error, because OCR text is often partial.
"""
from __future__ import annotations

import datetime as _dt
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# --- width ---------------------------------------------------------------------------------------

_FULL_TO_HALF = {i: i - 0xFEE0 for i in range(0xFF01, 0xFF5F)}
_FULL_TO_HALF[0x3000] = 0x20          # ideographic space
_FULL_TO_HALF[0xFFE5] = 0xA5          # ￥ -> ¥


def to_halfwidth(text: str) -> str:
    """Full-width ASCII forms (０-９, Ａ-Ｚ, ：, （）...) and the ideographic space to half-width."""
    return text.translate(_FULL_TO_HALF)


def normalize_code(text: str) -> str:
    """Codes, numbers and tax IDs: half-width, whitespace and separators removed, upper case."""
    return re.sub(r"[\s\-_]", "", to_halfwidth(text)).upper()


def normalize_text(text: str) -> str:
    """Free text: trim whitespace and a leading colon left over from '名称：'. A bracket opened near the
    end and never closed gets its closing bracket: PP-OCR often drops a final full-width '）'
    (电子发票（普通发票 -> 电子发票(普通发票))."""
    s = to_halfwidth(text).strip().lstrip(":").strip()
    if s.count("(") == s.count(")") + 1 and s.rfind("(") > s.rfind(")") and len(s) - s.rfind("(") > 2:
        s += ")"
    return s


# --- dates ---------------------------------------------------------------------------------------

_CN_DIGIT = {"〇": 0, "零": 0, "○": 0, "Ｏ": 0, "O": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5,
             "六": 6, "七": 7, "八": 8, "九": 9}


def _cn_small_number(text: str) -> int | None:
    """'三' -> 3, '十二' -> 12, '二十' -> 20, '三十一' -> 31 (month and day numerals)."""
    if not text:
        return None
    if "十" in text:
        head, _, tail = text.partition("十")
        tens = _CN_DIGIT.get(head, None) if head else 1
        ones = _CN_DIGIT.get(tail, None) if tail else 0
        if tens is None or ones is None:
            return None
        return tens * 10 + ones
    if len(text) == 1 and text in _CN_DIGIT:
        return _CN_DIGIT[text]
    return None


def _cn_date_to_digits(text: str) -> str:
    """二〇二四年三月五日 -> 2024年3月5日; leaves Arabic-digit dates untouched."""
    m = re.fullmatch(r"([〇零○一二三四五六七八九OＯ]{4})年([一二三四五六七八九十]{1,3})月"
                     r"([一二三四五六七八九十]{1,3})[日号]", text)
    if not m:
        return text
    year = "".join(str(_CN_DIGIT[c]) for c in m.group(1))
    month, day = _cn_small_number(m.group(2)), _cn_small_number(m.group(3))
    if month is None or day is None:
        return text
    return f"{year}年{month}月{day}日"


def parse_date(text: str) -> _dt.date | None:
    """A calendar date from the common printed forms, or None."""
    s = re.sub(r"\s+", "", to_halfwidth(text))
    s = _cn_date_to_digits(s)
    m = (re.fullmatch(r"(\d{4})年(\d{1,2})月(\d{1,2})[日号]?", s)
         or re.fullmatch(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})", s)
         or re.fullmatch(r"(\d{4})(\d{2})(\d{2})", s))
    if not m:
        return None
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def normalize_date(text: str) -> str | None:
    """ISO 8601 'YYYY-MM-DD', or None if the text is not a valid date."""
    d = parse_date(text)
    return d.isoformat() if d else None


def normalize_date_range(text: str) -> str | None:
    """ID-card validity '2015.03.05-2035.03.05' -> '2015-03-05/2035-03-05' (ISO interval);
    an open end '长期' stays as the word: '2015-03-05/长期'."""
    s = re.sub(r"\s+", "", to_halfwidth(text))
    parts = re.split(r"[-—–~至]+(?=\d{4}|长期)", s, maxsplit=1)
    if len(parts) != 2:
        return None
    start = normalize_date(parts[0])
    end = "长期" if parts[1] == "长期" else normalize_date(parts[1])
    if not start or not end:
        return None
    return f"{start}/{end}"


# --- amounts -------------------------------------------------------------------------------------

_TWO_PLACES = Decimal("0.01")


def parse_amount(text: str) -> Decimal | None:
    """A money figure as Decimal (not rounded), or None. Accepts ¥/￥, thousands commas, 元, spaces,
    a minus sign (red-letter invoices print negative amounts)."""
    s = to_halfwidth(text)
    s = re.sub(r"[\s,¥$]|元|圆|RMB|CNY", "", s, flags=re.IGNORECASE)
    # PP-OCR reads a small ¥ as V, Y, N or X; only before a figure with two decimals, so a code is not read as money
    s = re.sub(r"^[VYNXvyx](?=-?\d[\d]*\.\d\d$)", "", s)
    if not re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)", s):
        return None
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def format_amount(value: Decimal | float | str) -> str:
    """Decimal string with exactly two places, rounded half up: 1234.5 -> '1234.50'."""
    return str(Decimal(str(value)).quantize(_TWO_PLACES, rounding=ROUND_HALF_UP))


def normalize_amount(text: str) -> str | None:
    d = parse_amount(text)
    return format_amount(d) if d is not None else None


EXEMPT_RATES = ("免税", "不征税")     # rates printed as words: the line carries no tax


def normalize_rate(text: str) -> str | None:
    """Tax rate '13%' / '0.13' / '免税' -> '13%' style; 免税 and 不征税 stay words, 零税率 is '0%';
    None if unreadable."""
    s = re.sub(r"\s+", "", to_halfwidth(text))
    if s in EXEMPT_RATES or s == "***":
        return s
    if s == "零税率":
        return "0%"
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", s)
    if m:
        return f"{Decimal(m.group(1)).normalize():f}%"
    m = re.fullmatch(r"0?\.(\d+)", s)
    if m:
        return f"{(Decimal(s) * 100).normalize():f}%"
    return None


def rate_is_zero(text: str | None) -> bool | None:
    """Whether a printed tax rate puts no tax on its line: 免税, 不征税, 0% -> True; 13% -> False;
    None when the rate cannot be read (or is itself printed as ***), so nothing is concluded from it."""
    rate = normalize_rate(text or "")
    if rate is None or rate == "***":
        return None
    return rate in EXEMPT_RATES or Decimal(rate[:-1]) == 0


def is_masked(text: str | None) -> bool:
    """Asterisks printed where an amount would be: invoices print 税额 as *** (＊＊＊, * * *, ¥***) on
    a tax-exempt line and in its total. Whether that is right depends on the rate (data/validate.py)."""
    s = re.sub(r"[\s¥]", "", to_halfwidth(text or ""))
    return bool(re.fullmatch(r"[*∗﹡]+", s))


# --- 大写金额 --------------------------------------------------------------------------------------

_UPPER_DIGITS = "零壹贰叁肆伍陆柒捌玖"
_DIGIT_VALUE = {c: i for i, c in enumerate(_UPPER_DIGITS)}
# common variants (参/參 for 叁, as many fonts and OCR give it; traditional 貳 陸) and the small
# numerals some receipts print
_DIGIT_VALUE.update({"参": 3, "參": 3, "貳": 2, "陸": 6,
                     "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9})
_SMALL_UNIT = {"拾": 10, "十": 10, "佰": 100, "百": 100, "仟": 1000, "千": 1000}
_BIG_UNIT = {"万": 10_000, "萬": 10_000, "亿": 100_000_000, "億": 100_000_000}


def _parse_integer_words(text: str) -> int | None:
    """壹万贰仟零伍 -> 12005. Handles 零 fillers, a leading 拾 (拾万 = 100000) and 亿/万 sections."""
    total = 0          # finished 亿 sections
    section = 0        # current 万/亿 section
    number = 0         # pending digit
    seen = False
    for ch in text:
        if ch in _DIGIT_VALUE:
            number = _DIGIT_VALUE[ch]
            seen = True
        elif ch in _SMALL_UNIT:
            section += (number if (number or seen) else 1) * _SMALL_UNIT[ch]
            number = 0
            seen = True
        elif ch in _BIG_UNIT:
            unit = _BIG_UNIT[ch]
            section += number
            if unit == 100_000_000:
                total = (total + section) * unit
            else:
                # 万 applies to the part of the current 亿 block below it
                total += section * unit
            section = 0
            number = 0
            seen = True
        else:
            return None
    if not seen:
        return None
    return total + section + number


def parse_amount_words(text: str, ocr_tolerant: bool = True) -> Decimal | None:
    """大写金额 -> Decimal: 壹万贰仟叁佰肆拾伍圆陆角柒分 -> 12345.67; 肆佰壹拾贰圆整 -> 412.00;
    also 元 for 圆, 正 for 整, a leading ⊗/ⓧ mark and 负/（负数） for negative amounts. None if unreadable.
    With `ocr_tolerant`, text that does not parse as printed gets one more reading that undoes what
    OCR does to this line (see `_repair_amount_words`)."""
    value = _parse_amount_words(text)
    if value is None and ocr_tolerant:
        repaired = _repair_amount_words(text)
        if repaired is not None:
            value = _parse_amount_words(repaired)
    return value


_WORD_CHARS = set(_UPPER_DIGITS) | set(_DIGIT_VALUE) | set(_SMALL_UNIT) | set(_BIG_UNIT) | set("圆圓元角分整正负")


def _repair_amount_words(text: str) -> str | None:
    """What PP-OCR does to a 大写 line, undone: 圆 read as a look-alike (回, 国, 园, 图 ...) or dropped.
    Exactly one stray character may stand where 圆 goes (after the integer part, before the 角/分 part
    or the end); a missing 圆 is put back before the digit of 角 (or of 分). Anything else stray: no
    reading (None), so a garbled line is not turned into a confident wrong amount."""
    s = re.sub(r"[\s⊗ⓧ×Ⓧ⨂]", "", to_halfwidth(text)).replace("人民币", "")
    stray = [i for i, ch in enumerate(s) if ch not in _WORD_CHARS and ch not in "()（）"]
    if len(stray) > 1:
        return None
    if stray:
        i = stray[0]
        if "圆" in s or "圓" in s or "元" in s or not re.fullmatch(r"(?:零?.角)?(?:零?.分)?[整正]?", s[i + 1:]):
            return None
        return s[:i] + "圆" + s[i + 1:]
    if "圆" in s or "圓" in s or "元" in s:
        return None
    m = re.search(r"(.)角", s) or re.search(r"(.)分", s)
    if not m or m.start() == 0:
        return None
    return s[:m.start()] + "圆" + s[m.start():]


def _parse_amount_words(text: str) -> Decimal | None:
    s = re.sub(r"[\s⊗ⓧ×Ⓧ⨂]", "", to_halfwidth(text))
    s = s.replace("人民币", "")
    negative = False
    for prefix in ("(负数)", "负数", "负"):
        if s.startswith(prefix):
            negative, s = True, s[len(prefix):]
            break
    s = s.rstrip("整正")
    if not s:
        return None
    m = re.fullmatch(r"(?:(.*?)[圆圓元])?(?:零?(.)角)?(?:零?(.)分)?", s)
    if not m or not any(m.groups()):
        return None
    yuan_words, jiao, fen = m.groups()
    yuan = 0
    if yuan_words:
        parsed = _parse_integer_words(yuan_words)
        if parsed is None:
            return None
        yuan = parsed
    cents = 0
    for ch, scale in ((jiao, 10), (fen, 1)):
        if ch is not None:
            if ch not in _DIGIT_VALUE:
                return None
            cents += _DIGIT_VALUE[ch] * scale
    value = Decimal(yuan) + Decimal(cents) / 100
    return -value if negative else value


def _section_words(n: int) -> str:
    """0 < n < 10000 -> 壹仟零伍 style, with inner zeros collapsed and trailing zeros dropped."""
    out: list[str] = []
    zero_pending = False
    for unit_value, unit in ((1000, "仟"), (100, "佰"), (10, "拾"), (1, "")):
        digit = n // unit_value % 10
        if digit == 0:
            if out:
                zero_pending = True
            continue
        if zero_pending:
            out.append("零")
            zero_pending = False
        out.append(_UPPER_DIGITS[digit] + unit)
    return "".join(out)


def format_amount_words(value: Decimal | float | str) -> str:
    """Decimal -> 大写金额 as invoices print it: 412 -> 肆佰壹拾贰圆整, 1005.5 -> 壹仟零伍圆伍角,
    10.05 -> 壹拾圆零伍分, 0.5 -> 伍角, 100000 -> 壹拾万圆整; negative amounts get a leading 负."""
    d = Decimal(str(value)).quantize(_TWO_PLACES, rounding=ROUND_HALF_UP)
    sign = "负" if d < 0 else ""
    d = abs(d)
    yuan = int(d)
    cents = int((d - yuan) * 100)
    jiao, fen = divmod(cents, 10)

    words = ""
    if yuan:
        sections = []          # low to high, each < 10000
        n = yuan
        while n:
            sections.append(n % 10_000)
            n //= 10_000
        parts: list[str] = []
        for i in range(len(sections) - 1, -1, -1):
            sec = sections[i]
            unit = ["", "万", "亿", "万亿"][i]
            if sec == 0:
                # an empty section still needs a 零 before a lower non-empty one
                if parts and parts[-1] != "零" and any(sections[:i]):
                    parts.append("零")
                continue
            if parts and sec < 1000 and parts[-1] != "零":
                parts.append("零")
            parts.append(_section_words(sec) + unit)
        words = "".join(parts) + "圆"
    if jiao == 0 and fen == 0:
        return sign + (words or "零圆") + "整"
    if jiao:
        words += _UPPER_DIGITS[jiao] + "角"
    elif yuan:
        words += "零"
    if fen:
        words += _UPPER_DIGITS[fen] + "分"
    return sign + words


# --- one entry point by schema type ----------------------------------------------------------------

def normalize_value(field_type: str, text: str) -> str | None:
    """Normalise `text` by a schema field type. Text-like types never fail; parsed types give None
    when the text cannot be read as that type."""
    if text is None:
        return None
    if field_type == "date":
        return normalize_date(text)
    if field_type == "date_range":
        return normalize_date_range(text)
    if field_type == "amount":
        return normalize_amount(text)
    if field_type == "amount_words":
        d = parse_amount_words(text)
        return format_amount(d) if d is not None else None
    if field_type == "rate":
        return normalize_rate(text)
    if field_type in ("code", "id_number", "credit_code", "tax_id", "number"):
        return normalize_code(text)
    if field_type in ("quantity", "decimal"):
        d = parse_amount(text)
        return f"{d.normalize():f}" if d is not None else None
    return normalize_text(text)
