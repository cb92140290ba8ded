"""Every threshold of the decoding rules in one place, each with the reason for its value.

Defaults are the values the rules were tuned with on generated held-out layouts and the real samples
(bench/decode_ablation.py scores them); a rule reads its thresholds from the page context's settings.
A few are read from DEFAULT_SETTINGS where the function takes no settings (the learned cuts' places, a known
label's cut, which training computes as decoding does): their comments say so.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DecodeSettings:
    # --- spans -----------------------------------------------------------------------------------------
    strong_b: float = 0.5              # a B- tag this sure (and `strong_b_ratio` x its I-) starts a new span inside
    strong_b_ratio: float = 2.0        # a run of one key: two values of one field printed side by side
    segment_share: float = 0.5         # a colon segment votes for the field holding half its tagged characters ...
    segment_mass_share: float = 0.4    # ... else for the field with this share of their probability mass
    segment_tagged_share: float = 0.4  # ... when at least this share of the segment is tagged at all
    extend_floor: float = 0.1          # a span grows left over characters giving its field this much mass
    # --- document type -----------------------------------------------------------------------------------
    title_evidence: float = 0.5        # share of a required title a page must show for its type to be kept
    unsure_type: float = 0.5           # a title-less type (receipt) needs this classifier probability: generated
                                       # receipts score >= 0.9999, the OmniDoc pages taken for receipts <= 0.05
    type_form_keys: int = 4            # a page with this many key-colon lines and no money wording of a title-less
                                       # type (合计, 实收 ...) is a form: receipts print their sums
    type_key_evidence: float = 0.6     # ... or prints this share of its fields' own keys (发票代码, 开票日期 ...): a
                                       # title under a seal is lost, the keys are not (doctype.key_evidence)
    title_line_edits: int = 1          # a title line misread in this many characters per 6 still names its type
    title_extra: int = 4               # characters a title line may hold besides the title (a province)
    # a title is printed as a unit, on a line of its own or beside a number or date on its row; in a long line
    # of prose half a short title's characters occur in order by chance (a research report's 营业收入 and
    # 执业 hold half of 营业执照): lines longer than a title by more than this are no evidence of it
    title_evidence_extra: int = 12
    title_min_chars: int = 3           # ... and two characters of a short title are a common word (营业收入 holds
                                       # 营业 of 营业执照): evidence needs at least this many, in order
    key_evidence_min_len: int = 3      # key_evidence: a field's own key phrase this long is evidence (not 名称) ...
    key_evidence_min_found: int = 3    # ... and fewer keys than this shown is none: a form asking for 公民身份号码
                                       # is no ID card
    key_read_share: float = 0.75       # ... a key of 4+ characters counts when a line holds this share of them
    key_line_longer: int = 3           # in order (開票日期, 纳税人阈别号), that line at most this many times as long
    # --- form or other (form_structure) ------------------------------------------------------------------
    form_min_keys: int = 2             # a page taken for a form pairs at least this many distinct label-like keys
    form_key_density: float = 0.08     # ... and at least this many per line of the page (one key per 12.5 lines)
    # --- keys, and free text over several OCR lines ----------------------------------------------------
    rekey_misread_min: int = 5         # a key phrase this long read with one wrong character still names its field
    key_piece_min: int = 3             # a piece of a key phrase this long (统一社会信 of 统一社会信用代码) is key text
    key_misread_min: int = 6           # ... and one this long with one wrong character (纳税人识刷)
    long_key: int = 8                  # a line holding a key this long misread in several characters ...
    long_key_extra: int = 2            # ... (at most this many characters longer than the key) ...
    long_key_share: float = 2 / 3      # ... and this share of the key's characters in order is key text
    row_key_reach: float = 0.3         # a key line left of a lone value ends at most this x line height into it
    row_key_far: float = 2.0           # a colon-less label more line heights left of a value is another column's
    label_cell_gap: float = 4.0        # fields_by_label_cells: a label line's value starts within this x line height
    word_end_chars: int = 2            # text_to_word_end: a value tagged short of its word runs on by at most this many
    join_overlap: float = 0.3          # a line continuing another may overlap it by this x line height (OCR boxes
                                       # of a cut line overlap; a third of a line: the same ink read twice)
    join_below: float = 0.8            # a name's bracketed part stacked below it starts within this many lines
    join_right_gap: float = 1.5        # ... or on its row, within this many line heights right of it
    join_right_overlap: float = 0.8    # ... overlapping it by at most this x line height
    join_centre: float = 0.3           # stacked parts: centres within this x the wider (or head's) width
    join_stack: float = 1.0            # a title's head stacked above its bracketed part: within this many lines
    colon_gap: int = 2                 # "label：content" free text whose label ends in up to this many untagged chars
    piece_share: float = 0.5           # a free-text candidate under this share of its colon segment is a piece of
                                       # it: it gives way to a candidate of its field that fills its segment
    title_edits: int = 1               # a title read with this many edits per `title_edit_chars` characters (at
    title_edit_chars: int = 6          # least one) is the nearest known title, when no other title is as near
    # --- items --------------------------------------------------------------------------------------------
    row_tolerance: float = 0.5         # item cells whose deskewed centres are within this x line height: one row
    row_lower: float = 0.35            # a second cell of a key this much lower starts the next row
    item_band: float = 0.6             # a missing quantity/tax is searched within this x line height of its row
    heads_min: int = 3                 # column heads of at least this many item fields, side by side, make the
                                       # table's head row (above_item_heads)
    # --- totals by arithmetic ----------------------------------------------------------------------------
    sum_keep: int = 2                  # figures re-chosen so the sum holds must keep this many of the model's totals
                                       # (the 大写 line reading as the total counts as one): one is a coincidence
    words_share: float = 0.6           # a line with this share of a figure's 大写 characters in order spells it
                                       # (教柒圳拾肆圆玖角捌分 holds 8 of 柒佰捌拾肆圆玖角捌分's 10)
    # --- forms -------------------------------------------------------------------------------------------
    form_trust: float = 0.4            # the model knows the page when this share of its lines is tagged q/a ...
    form_other: float = 0.7            # ... and then a line it tags "other" with this mass holds no key or value
    form_ocr_min: float = 0.7          # a pair from a line OCR read less surely than this is more often wrong
    form_row_tol: float = 0.5          # same row: deskewed centres within this x line height
    form_right_gap: float = 8.0        # a value right of its key starts within this many line heights
    form_below_gap: float = 1.0        # a value below its key starts within this many line heights of its bottom
    form_colon_key_max: int = 14       # a colon after more characters than this, text following, is inside a value
    form_far_gap: float = 16.0         # a known label with nothing within form_right_gap takes a value this far right
                                       # (a cover page's values centred on long underlines)
    form_long_key: int = 10            # keys longer than this take no value from the line below
    form_key_min: float = 0.0          # a colon-less line needs at least this key score (with its row's) ...
    form_key_margin: float = 0.8       # ... and this much more than the text it takes as its value
    form_stack_gap: float = 0.6        # the next line of a label or value starts within this x line height of
                                       # its bottom (a form's rows are a line height or more apart)
    form_title_gap: float = 1.1        # ... a title's next line centred under it: within this (titles on a cover
                                       # are set at a line's pitch, a form's rows further apart than that)
    form_same_size: float = 0.75       # ... in type at least this x as tall (a small label above its answer is
                                       # no continuation: form_above prints labels at 0.7 x the answer's size)
    form_link_weight: float = 1.5      # the link head's say: a sure link (logit >= form_link_scale) adds this
    form_link_scale: float = 4.0       # much, a sure non-link takes it away; right vs below differs by 0.5
    form_row_join: float = 0.5         # a further piece this close (x line height) is the same value cut by OCR
    form_row_max: int = 2              # more further values than this in a key's row: a data table's row, no pairs
    form_row_link: float = 0.0         # a further value on a key's row needs a link logit above this (or digits,
                                       # or answer tags): a table row's next cell may be another field's label
    form_tag_margin: float = 0.2       # tags say answer (question) clearly when its mass passes the other's by
                                       # this: a further value on a key's row; a known label's cut (inline_label)
                                       # and its run-on characters (_extend_label), read from DEFAULT_SETTINGS
    form_role_label: float = 0.3       # learned roles (form_roles.py): a piece this much more question than
                                       # answer is a label, nobody's value (第一债务人 | 第二债务人 headings)
    form_role_answer: float = 0.5      # ... and one this much more answer than question or other is a value
                                       # even when it reads as a sentence (申请理由 | 因工作需要…，需办理…),
                                       # and no part of a label over two lines (朱轩秀 over 汉族)
    wide_slack: float = 1.0            # with a learned scorer, keys and values this much below the hand
                                       # thresholds (form_key_min, form_key_margin) are proposed
    sign_date_rows: float = 3.0        # a signature block's date label stands beside a signature label or at most
                                       # this many of its line heights under it (signature_block)
    # --- forms: pieces, titles, cuts (form_pieces.py, form_cuts.py) -------------------------------------
    title_size: float = 1.25           # a line this much taller than the page's median, alone on its row, is a
                                       # title (title_line)
    label_tail: int = 6                # a known word opening a label runs on for at most this many characters
                                       # (_extend_label, read from DEFAULT_SETTINGS)
    cut_max: int = 14                  # a label is at most this many characters long: later places are no cuts
                                       # (form_cuts.places, read from DEFAULT_SETTINGS)
    # --- forms: ruled lines and columns (form_grid.py, form_layout.py) ----------------------------------
    wall_slack: float = 0.3            # x line height: a ruled line between two pieces may reach this far into
                                       # either's box, and its ends this far short of their rows
    past_key_row: float = 1.0          # Layout.past_a_key: a label within this x line height of the value's row
                                       # stands on it (looser than form_row_tol, which pairs)
    column_rows: int = 3               # far values aligned on this many rows make a value column (column_values)
    # --- forms: a label over two lines or letter-spaced (form_joins.py) ---------------------------------
    tight_gap: float = 0.3             # x line height: the two lines of one label touch; two rows of a table stand
                                       # further apart
    tight_chars: int = 4               # ... the first of at most this many characters, the second of three (是否一般
                                       # / 纳税人; a four-character second line is a label of its own: 本科 / 入职日期
                                       # is a value over a label)
    touch_overlap: float = 0.5         # the OCR boxes of two lines of a packed cell may overlap by this x line height
    spaced_gap: float = 2.0            # x line height: the characters of a letter-spaced label (姓 | 名) stand this
                                       # close
    # --- forms: a glued line cut at the page's label/value column (form_glued.py) -----------------------
    column_cut_rows: int = 2           # label/value boundaries aligned on this many rows make a column a glued
                                       # line is cut at
    column_cut_align: float = 0.75     # x line height: rows whose values start this close share that column
    column_cut_slack: float = 0.6      # x line height: how far the glued line's character boundary may stand from
                                       # that column
    same_size: float = 0.15            # ... and the glued line is printed in the rows' type size, its height within
                                       # this share of theirs (a title over them is larger)
    stack_reach: float = 3.5           # x line height: ... and stands among those rows, or this close above or
                                       # below them


DEFAULT_SETTINGS = DecodeSettings()
