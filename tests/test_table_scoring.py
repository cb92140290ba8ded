"""Scoring of a form's tables and of the pairs a clerk would never sign (training/evaluate.py), as the forms
bench (bench/form_pairs_bench.py) reports them."""
from data.document import Cell, Pair, Table
from training.evaluate import gold_tables, pair_errors, score_tables

REC = {
    "lines": [{"id": 0, "text": "姓名", "box": [10, 10, 50, 30], "label": "header"},
              {"id": 1, "text": "专业", "box": [110, 10, 150, 30], "label": "header"},
              {"id": 2, "text": "张三", "box": [10, 40, 50, 60], "label": "other"},
              {"id": 3, "text": "法学", "box": [110, 40, 150, 60], "label": "other"},
              {"id": 4, "text": "电话：", "box": [10, 100, 60, 120], "label": "question"},
              {"id": 5, "text": "13800000000", "box": [70, 100, 190, 120], "label": "answer"},
              {"id": 6, "text": "住址：", "box": [10, 130, 60, 150], "label": "question"}],
    "tables": [{"columns": ["姓名", "专业"], "column_lines": [0, 1], "rows": [["张三", "法学"], ["李四", ""]],
                "cell_lines": [[2, 3], [None, None]]}],
}


def test_table_cells_score_as_column_and_text_with_blank_cells_left_out():
    gold = gold_tables(REC)
    right = Table(columns=["姓名", "专业"], rows=[[Cell("张三"), Cell("法学")], [Cell("李四"), Cell("")]])
    c = score_tables(gold, [right])
    assert (c.tp, c.fp, c.fn) == (3, 0, 0)
    # a cell put under the wrong column is one wrong and one missed; a table not found misses every cell
    swapped = Table(columns=["姓名", "专业"], rows=[[Cell("张三"), Cell("法学")], [Cell(""), Cell("李四")]])
    c = score_tables(gold, [swapped])
    assert (c.tp, c.fp, c.fn) == (2, 1, 1)
    c = score_tables(gold, [])
    assert (c.tp, c.fp, c.fn) == (0, 0, 3)


def test_pair_errors_count_labels_taken_as_values_and_table_lines_read_as_pairs():
    good = Pair("电话", "13800000000", [10, 100, 60, 120], [70, 100, 190, 120])
    assert pair_errors(REC, [good]) == {"label_as_value": 0, "table_line_pairs": 0}
    label_value = Pair("电话", "住址", [10, 100, 60, 120], [10, 130, 60, 150])
    table_pair = Pair("姓名", "专业", [10, 10, 50, 30], [110, 10, 150, 30])   # a heading row read as a pair
    row_pair = Pair("张三", "法学", [10, 40, 50, 60], [110, 40, 150, 60])
    assert pair_errors(REC, [good, label_value, table_pair, row_pair]) == \
        {"label_as_value": 2, "table_line_pairs": 2}


def test_the_evaluation_report_scores_a_forms_table_cells_beside_its_pairs():
    from training.evaluate import PageScore, Report, score_pairs
    r = Report()
    right = Table(columns=["姓名", "专业"], rows=[[Cell("张三"), Cell("法学")]])
    r.add(PageScore("generic_form", {}, score_pairs([("电话", "1")], [("电话", "1")]),
                    score_tables(gold_tables(REC), [right])), "generic_form", "none")
    d = r.as_dict()["doc_types"]["generic_form"]
    assert d["table_cells"]["tp"] == 2 and d["table_cells"]["fn"] == 1 and d["pairs"]["f1"] == 1.0
    assert "[table cells]" in r.table()
