"""Generic forms, layer 1: what a piece of text says, from its characters alone.

Lexical evidence holds across forms: a known label (`key_word`), a noun that ends most labels
(KEY_ENDINGS), printed options and their ticks (`options`, `ticked`), help printed in a field (`is_hint`),
a section heading (SECTION). It is what a reader of any Chinese form knows, not what one form prints, and it
needs no piece, line or layout: every other forms file reads it, and it reads none of them (the layered
order is in forms.py's docstring).
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

# nouns that end most Chinese form keys (名称, 地址, 号码, 日期, 电话, 类别, 面貌, 情况, 专业, 时间 ...)
KEY_ENDINGS = tuple("名址号码期话别型数额行位门历校由称人件箱编龄族贯职务类级貌况业间点见目系式容因码")
# whole labels of personal, company, application, HR, medical and school forms: a line reading exactly
# one of these is a label, never somebody's answer (an empty field does not take the next label)
KEY_WORDS = ("地址", "电话", "手机", "姓名", "名称", "日期", "号码", "账号", "性别", "部门", "职位", "单位",
             "邮箱", "邮编", "传真", "金额", "备注", "学历", "民族", "籍贯", "年龄", "工号", "类型", "事由",
             "出生日期", "身份证号", "身份证号码", "联系电话", "联系人", "联系地址", "政治面貌", "婚姻状况",
             "文化程度", "工作单位", "职务", "职称", "学院", "专业", "班级", "学号", "年级", "导师", "指导教师",
             "题目", "论文题目", "院系", "学位", "作者", "申请人", "申请日期", "签名", "签字", "盖章", "日期",
             "电子邮件", "邮政编码", "户籍", "国籍", "血型", "身高", "体重", "病史", "科室", "床号", "诊断",
             "住址", "现住址", "家庭住址", "开户行", "开户银行", "银行账号", "法定代表人", "注册资本",
             "统一社会信用代码", "经办人", "审核人", "负责人", "备注", "附件", "意见", "审批意见", "时间")
SENTENCE = re.compile(r"[，。？！；,?!;]")
PROSE = re.compile(r"[。？！?!]")          # ends a sentence: prose, not a phrase
NOTE = re.compile(r"[（(][^（()）]*[)）]$")     # a bracketed note closing a text
NOT_A_VALUE = re.compile(r"^[\s$¥￥□☐☑☒■√×✓✔_\-—.·•:：/|()（）]*$")   # blank fills, currency signs, boxes
BLANK_DATE = re.compile(r"^[\s年月日时分秒]*$")                          # an unfilled 年  月  日
# the text printed in a photo box (照片, 一寸照片, （贴照片处）, 近期免冠彩色照片): the box's, nobody's answer
PHOTO_BOX = re.compile(r"^[（(]?(请)?(粘?贴)?(近期)?(免冠)?(正面)?(彩色|蓝底|白底|红底)?(小?[一二12]寸)?(免冠)?(彩色)?"
                       r"(证件)?(照片|相片)(处)?[)）]?$")
BOX = "□☐○◯"                                                          # an unticked box or circle ...
TICK = "☑☒■√✓✔◉⊙"                                                     # ... and a ticked one
# unticked check boxes as OCR reads them: □同意 □不同意, or 口是口否 / 口是 口否 (the box read as 口); a lone
# 口-word (口腔科, or a box read as 口 before one option: 口男) is an option only beside others (form_layout) ...
CHECK_BOXES = re.compile(rf"^([{BOX}]|口(?=[\u4e00-\u9fff]{{1,3}}\s*口))")
KOU = re.compile(r"^口[\u4e00-\u9fff]{1,3}$")
# ... and a ticked one: the answer is the option after the tick (□男 ☑女 -> 女)
TICKED = re.compile(rf"[{TICK}]\s*([^\s{BOX}{TICK}口]+)")
CHOICES = re.compile(r"^[^/\d]{1,4}(/[^/\d]{1,4}){2,}$")
PAGE_NUMBER = re.compile(r"^(.?第.{0,3}[页頁].*|.?\d*\s*[页頁]|\d+\s*/\s*\d+|page\s*\d+.*)$", re.I)
# hint and instruction text printed in a field: （使领馆人员填写）, 请勾选, (签字), （如有）
HINT = re.compile(r"^[（(\[【〔].*(填|写|勾|选|签|盖|注明|如有|可|须|由|请).*[)）\]】〕]$"
                  r"|^请.{0,8}(填|写|勾|选|签|注明)")
SPACED = re.compile(r"^[\u4e00-\u9fff](\s+[\u4e00-\u9fff]){1,4}$")     # a letter-spaced label: 姓  名
SECTION = re.compile(r"^([一二三四五六七八九十]+[、.．]|\d+[、.．]\D|第.{1,3}[部章节条])")   # 一、基本信息: a heading


def cjk(text: str) -> bool:
    """Every character Chinese (the basic CJK block)."""
    return all("\u4e00" <= ch <= "\u9fff" for ch in text)


def alnum(text: str) -> str:
    """`text` with only its letters and digits: how the learned models' trainers match OCR to the truth."""
    return "".join(ch for ch in text if ch.isalnum())


def char_share(text: str, test: Callable[[str], bool]) -> float:
    """The share of `text`'s characters that pass `test` (digits, Latin letters, punctuation)."""
    return sum(map(test, text)) / max(1, len(text))


def prose(text: str) -> bool:
    """Sentences that end and go on (a form's notes and questions: 市政府收集…保密。除非…), not one
    sentence ending an answer (经营范围 | …服务。) nor one closed by a bracketed note (…技术咨询。（依法须经
    批准的项目…）, the note is part of it)."""
    body = NOTE.sub("", text.strip()).strip()
    return PROSE.search(body[:-1]) is not None


def key_word(text: str) -> bool:
    """A whole label everybody knows (姓名, 政治面貌), or a letter-spaced one (姓  名): never a value."""
    return re.sub(r"\s+", "", text) in KEY_WORDS or SPACED.match(text) is not None


def qualified_label(text: str) -> bool:
    """A known label, or one with up to three characters before it (学生姓名, 所学专业): what a cover page
    prints left of a value far out on its underline."""
    t = re.sub(r"\s+", "", text)
    return key_word(text) or (len(t) <= 7 and t.endswith(KEY_WORDS) and
                              any(t.endswith(w) and len(t) - len(w) <= 3 for w in KEY_WORDS))


def key_score(text: str, tags: np.ndarray) -> float:
    """How much a colon-less piece of text looks like a form key rather than a value (> 0: key).
    `tags` is its mean [question, answer, header, other] mass."""
    if SENTENCE.search(text):
        return -3.0
    s = 2.0 * float(tags[0] - tags[1])
    if key_word(text):
        s += 1.5
    base = re.sub(r"[（(][^（()）]*[)）]$", "", text)          # 金额（小写）, 申报学院（部门）: the key before it
    if text.endswith(KEY_ENDINGS) or base.endswith(KEY_ENDINGS) or re.sub(r"[（()）]", "", text).endswith(KEY_ENDINGS):
        s += 0.8
    if any(ch.isdigit() for ch in text):
        s -= 1.0
    if len(text) > 12:
        s -= 1.5
    return s


def is_hint(text: str) -> bool:
    """Printed help inside a field (（使领馆人员填写）, 请勾选): no answer, whatever stands after it."""
    return HINT.search(text.strip()) is not None


CASE_QUALIFIERS = ("大写", "小写")       # 金额（小写）: part of the key, though 写 reads like a fill hint
FILL_HINT = re.compile(r"^(非?必填|选填|必选|可选|可多选|单选|多选|请勾选|请选择|请填写|如有|选择)$")   # not 小写, 部门
KEY_HINT = re.compile(r"\s*([（(\[【〔][^（()）\[\]【】〔〕]*[)）\]】〕]|请勾选|请选择|可多选|请填写)$")


def strip_key_hint(text: str) -> str:
    """A key without the hint printed after it (手机（必填）, 领取方式（请勾选）, 领取方式请勾选): the field is
    what the form asks, the hint how to answer. A bracket that qualifies the key (申报学院（部门）) stays."""
    m = KEY_HINT.search(text)
    if m is None or len(text[:m.start()].strip()) < 2:
        return text
    part = m.group(1)
    inner = part[1:-1].strip()
    # a bracketed fill hint (（必填）, （本人手写）, （由单位填写）) leaves; a qualifier (（部门）, （小写）) stays
    hint = FILL_HINT.match(inner) is not None or (is_hint(part) and inner not in CASE_QUALIFIERS)
    return text[:m.start()].strip() if part[0] not in "（([【〔" or hint else text


def options(text: str) -> bool:
    """A run of printed choices with their boxes (□男 □女, 口是口否, ☑同意): one box at least."""
    return CHECK_BOXES.match(text) is not None or TICKED.search(text) is not None or \
        any(ch in BOX for ch in text[:1])


def ticked(text: str) -> str | None:
    """The option a box is ticked for (□男 ☑女 -> 女), if one is. A filled box OCR lost leaves its option
    bare among boxed ones (男 □女 -> 男): the one option without a box is the ticked one."""
    m = TICKED.search(text)
    if m:
        return m.group(1)
    if SENTENCE.search(text):           # 慢性胃炎，口服药物治疗: a sentence with 口 in it, no option list
        return None
    # OCR reads a box as 口: a 口 that opens the text or a word, or a run of 口-options (口是口否), is one;
    # 口 inside a word (每日口服两次) is the character
    kou = re.search(r"(^|\s)口", text) is not None or re.fullmatch(r"(口[\u4e00-\u9fff]{1,3}\s*)+", text) is not None
    boxes = BOX + ("口" if kou else "")
    opts = re.findall(rf"([{boxes}]?)\s*([^\s{boxes}{TICK}]+)", text)
    bare = [o for box, o in opts if not box]
    return bare[0] if len(opts) >= 2 and len(bare) == 1 and all(len(o) <= 6 for _, o in opts) else None


def bracketed_note(text: str) -> bool:
    """A line that is all one bracket ((须与证件一致), （如有）): a note, no part of a value above it."""
    return re.match(r"^[（(].*[)）]$", text) is not None
