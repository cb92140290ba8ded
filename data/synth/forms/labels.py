"""Labels of generic Chinese forms and plausible values for each kind of label.

A form kind (personal, company, application, HR, medical, school/thesis, registration) is a title
list and a list of `Label`s. A label's `kind` names the value generator (`make_value`): names,
dates, phone and ID numbers, addresses, schools, amounts, free text ... Check-box kinds (`CHECKS`)
print their options with one box ticked; the value is the ticked option. Long kinds (`LONG`) are
the ones that wrap over two lines in a narrow cell.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Callable

from data.synth import values as V


@dataclass(frozen=True)
class Label:
    text: str                      # as printed, without the colon
    kind: str                      # value generator, see VALUES and CHECKS


def _d(rng: random.Random, a: tuple[int, int, int], b: tuple[int, int, int]) -> dt.date:
    return V.date_between(rng, dt.date(*a), dt.date(*b))


def _date(rng: random.Random) -> str:
    d = _d(rng, (2018, 1, 1), (2025, 6, 30))
    return rng.choice([f"{d.year}年{d.month}月{d.day}日", f"{d:%Y-%m-%d}", f"{d:%Y.%m.%d}",
                       f"{d.year}/{d.month}/{d.day}"])


def _birth(rng: random.Random) -> str:
    d = _d(rng, (1960, 1, 1), (2004, 12, 31))
    return rng.choice([f"{d.year}年{d.month}月{d.day}日", f"{d:%Y.%m}", f"{d:%Y-%m-%d}", f"{d.year}年{d.month}月"])


def _id(rng: random.Random) -> str:
    return V.id_number(rng, _d(rng, (1960, 1, 1), (2004, 1, 1)), rng.random() < 0.5)


def _period(rng: random.Random) -> str:
    y = rng.randint(2005, 2021)
    return f"{y}.09-{y + rng.choice((3, 4, 4, 2))}.06"


SCHOOLS = ["北京大学", "清华大学", "浙江大学", "武汉大学", "四川大学", "华南理工大学", "山东大学", "中山大学",
           "南京师范大学", "西安交通大学", "华中科技大学", "东北财经大学", "湖南农业大学", "重庆邮电大学",
           "上海外国语大学", "郑州大学", "云南大学", "河北工业大学"]
MAJORS = ["计算机科学与技术", "会计学", "汉语言文学", "临床医学", "机械工程", "法学", "英语", "市场营销",
          "土木工程", "应用数学", "电子信息工程", "工商管理", "护理学", "软件工程", "环境科学"]
COLLEGES = ["信息科学与工程学院", "经济管理学院", "文学院", "医学院", "机械工程学院", "法学院", "外国语学院",
            "数学与统计学院", "马克思主义学院", "化学化工学院"]
DEPTS = ["财务部", "技术部", "市场部", "人力资源部", "行政部", "研发中心", "客服部", "生产部", "质量部", "采购部"]
POSITIONS = ["工程师", "会计", "经理", "专员", "主管", "助理", "设计师", "销售代表", "项目经理", "出纳"]
CLINICS = ["内科", "外科", "儿科", "妇产科", "眼科", "口腔科", "皮肤科", "骨科", "中医科", "急诊科"]
TOPICS = ["基于深度学习的中文文档信息抽取方法研究", "城市社区养老服务供给模式研究", "高速铁路桥梁振动特性分析",
          "新媒体环境下高校思想政治教育创新研究", "乡村振兴背景下农村电商发展路径探析",
          "某型液压系统故障诊断与寿命预测", "小学数学课堂提问有效性的调查研究", "碳中和目标下企业绿色转型的财务效应"]
REASONS = ["因工作需要赴外地出差，需办理相关手续", "本人因家庭原因申请调整工作岗位，望领导批准",
           "参加全国学术会议并作报告，特申请差旅经费支持", "孩子入学需要提供居住证明材料",
           "申请办理个人档案转递手续", "因身体原因需住院治疗两周，特此申请", "拟开展横向合作项目，申请使用实验室场地"]
DIAGNOSES = ["上呼吸道感染，建议多饮水，注意休息，三日后复诊", "血压偏高，建议低盐饮食，定期监测血压",
             "未见明显异常", "轻度脂肪肝，建议控制饮食、加强锻炼", "慢性胃炎，口服药物治疗，忌辛辣"]
AWARDS = ["国家奖学金", "三好学生", "优秀学生干部", "校级一等奖学金", "数学建模竞赛省级二等奖", "优秀毕业生"]
PROVINCES = ["河北", "山西", "辽宁", "江苏", "浙江", "安徽", "福建", "江西", "山东", "河南", "湖北", "湖南",
             "广东", "四川", "贵州", "云南", "陕西", "甘肃"]

Gen = Callable[[random.Random], str]

VALUES: dict[str, Gen] = {
    "name": V.person_name,
    "date": _date,
    "birth": _birth,
    "id": _id,
    "mobile": lambda r: V.phone(r, mobile=True),
    "phone": lambda r: V.phone(r),
    "email": lambda r: "".join(r.choice("abcdefghjkmnprstwxyz") for _ in range(r.randint(4, 8)))
    + str(r.randint(1, 999)) + r.choice(["@163.com", "@qq.com", "@126.com", "@sina.com", "@foxmail.com"]),
    "address": lambda r: V.address(r, short=r.random() < 0.2),
    "postcode": lambda r: str(r.randint(10, 85)) + V.digits(r, 4),
    "nation": lambda r: r.choice(["汉族", "汉族", "汉族", "回族", "满族", "壮族", "蒙古族", "土家族"]),
    "native": lambda r: r.choice(PROVINCES) + r.choice(["省", ""]) + V.place(r)[1],
    "politics": lambda r: r.choice(["群众", "共青团员", "中共党员", "中共预备党员"]),
    "edu": lambda r: r.choice(["本科", "硕士研究生", "大专", "博士研究生", "高中", "中专"]),
    "degree": lambda r: r.choice(["学士", "硕士", "博士", "无"]),
    "school": lambda r: r.choice(SCHOOLS),
    "major": lambda r: r.choice(MAJORS),
    "college": lambda r: r.choice(COLLEGES),
    "klass": lambda r: r.choice(["计科", "会计", "汉语言", "临床", "机械", "法学"]) + f"{r.randint(18, 24)}"
    f"{r.randint(1, 6):02d}班",
    "student_no": lambda r: str(r.randint(2016, 2024)) + V.digits(r, r.choice((6, 8))),
    "teacher": lambda r: V.person_name(r) + r.choice(["", " 教授", " 副教授", " 讲师"]),
    "topic": lambda r: r.choice(TOPICS),
    "company": V.company_name,
    "credit": V.credit_code,
    "capital": V.registered_capital,
    "scope": V.business_scope,
    "amount": lambda r: (r.choice(["", "", "￥", "¥"]) + f"{r.randint(50, 50000)}.{r.randint(0, 99):02d}"
                         if r.random() < 0.6 else f"{r.randint(1, 500) * 100}元"),
    "bank": lambda r: r.choice(V.BANKS),
    "account": lambda r: V.digits(r, r.choice((16, 19))),
    "dept": lambda r: r.choice(DEPTS),
    "position": lambda r: r.choice(POSITIONS),
    "staff_no": lambda r: r.choice(["", "A", "HR"]) + V.digits(r, r.choice((5, 6))),
    "number": lambda r: str(r.randint(1, 30)),
    "days": lambda r: f"{r.randint(1, 15)}天",
    "age": lambda r: f"{r.randint(18, 80)}" + r.choice(["", "岁"]),
    "height": lambda r: f"{r.randint(150, 190)}cm",
    "weight": lambda r: f"{r.randint(45, 95)}kg",
    "clinic": lambda r: r.choice(CLINICS),
    "record_no": lambda r: V.digits(r, r.choice((7, 8, 10))),
    "reason": lambda r: r.choice(REASONS),
    "diagnosis": lambda r: r.choice(DIAGNOSES),
    "award": lambda r: r.choice(AWARDS),
    "period": _period,
    "text": lambda r: r.choice(["无", "良好", "已提交", "详见附件", "按规定执行", "暂无"]),
    "field": lambda r: r.choice(["自然语言处理", "计算机视觉", "公司财务", "区域经济学", "中国现当代文学", "结构工程",
                                 "心血管内科", "基础数学", "环境工程", "思想政治教育"]),
    "clc": lambda r: r.choice(["TP391", "F272", "G642", "R473", "TU375", "D922", "O175", "X703"]),
    "secrecy": lambda r: r.choice(["公开", "公开", "内部"]),
    "school_code": lambda r: "10" + V.digits(r, 3),
    "udc": lambda r: r.choice(["004", "33", "37", "61", "624", "34"]),
}

CHECKS: dict[str, list[str]] = {
    "gender": ["男", "女"],
    "marital": ["未婚", "已婚", "离异"],
    "yesno": ["是", "否"],
    "has": ["无", "有"],
    "blood": ["A型", "B型", "O型", "AB型"],
    "idtype": ["身份证", "护照", "港澳通行证", "其他"],
    "stay": ["住宿", "不住宿"],
    "agree": ["同意", "不同意"],
    "pickup": ["自取", "邮寄", "电子版"],
    "study": ["全日制", "非全日制"],
}
LONG = {"address", "scope", "reason", "diagnosis", "topic"}

# kind -> (titles, labels). Some labels are long on purpose: in narrow cells they wrap over two lines.
FORMS: dict[str, tuple[list[str], list[Label]]] = {}


def _form(kind: str, titles: list[str], spec: str) -> None:
    FORMS[kind] = (titles, [Label(*item.split(":")) for item in spec.split()])


_form("personal", ["个人信息登记表", "人员基本情况表", "个人简历表", "居民信息采集表"],
      "姓名:name 性别:gender 民族:nation 出生日期:birth 籍贯:native 政治面貌:politics 身份证号码:id "
      "婚姻状况:marital 户口所在地:native 现住址:address 联系电话:mobile 电子邮箱:email 邮政编码:postcode "
      "文化程度:edu 毕业院校:school 所学专业:major 身高:height 血型:blood")
_form("company", ["企业基本信息登记表", "供应商信息登记表", "合作单位信息表", "客户信息登记表"],
      "企业名称:company 统一社会信用代码:credit 法定代表人:name 注册资本:capital 成立日期:date "
      "注册地址:address 经营范围:scope 联系人:name 联系电话:phone 手机号码:mobile 开户银行:bank "
      "银行账号:account 电子邮箱:email 是否一般纳税人:yesno 邮政编码:postcode")
_form("application", ["申请表", "签证申请表", "补助申请表", "办理业务申请表", "证明开具申请表"],
      "申请人:name 性别:gender 出生日期:birth 证件类型:idtype 证件号码:id 联系电话:mobile 通讯地址:address "
      "申请日期:date 申请事项:text 申请理由:reason 提交证件情况:text 领取方式:pickup 申请金额:amount "
      "经办人:name 受理编号:record_no 是否加急:yesno")
_form("hr", ["员工入职登记表", "请假申请表", "应聘人员登记表", "员工转正申请表", "离职申请表"],
      "姓名:name 性别:gender 工号:staff_no 所在部门:dept 职位:position 入职日期:date 出生年月:birth "
      "最高学历:edu 毕业院校:school 身份证号码:id 联系电话:mobile 紧急联系人:name 紧急联系电话:mobile "
      "家庭住址:address 试用期:days 请假天数:days 请假事由:reason 婚姻状况:marital 部门负责人:name")
_form("medical", ["门诊病历", "健康体检登记表", "入院登记表", "预防接种登记卡", "患者信息登记表"],
      "姓名:name 性别:gender 年龄:age 就诊科室:clinic 病历号:record_no 就诊日期:date 联系电话:mobile "
      "家庭住址:address 过敏史:has 既往病史:has 血型:blood 身高:height 体重:weight 诊断意见:diagnosis "
      "医师签名:name 医保卡号:account 紧急联系人:name")
_form("school", ["学生基本信息表", "研究生入学登记表", "奖学金申请表", "毕业生登记表", "实习申请表"],
      "姓名:name 性别:gender 学号:student_no 所在学院:college 专业:major 班级:klass 入学日期:date "
      "出生日期:birth 政治面貌:politics 身份证号:id 联系电话:mobile 家庭住址:address 指导教师:teacher "
      "学习形式:study 获奖情况:award 辅导员:name 论文题目:topic 申报学院（部门）:college")
_form("registration", ["会议报名表", "参会回执", "培训报名表", "活动报名登记表", "考试报名表"],
      "单位名称:company 参会人:name 性别:gender 职务:position 手机:mobile 电子邮箱:email 到达日期:date "
      "是否住宿:stay 通讯地址:address 邮编:postcode 报名日期:date 缴费金额:amount 发票抬头:company "
      "纳税人识别号:credit 身份证号码:id")

# a label followed by several values in one table row
MULTI: list[tuple[str, list[str]]] = [
    ("联系方式", ["mobile", "email"]), ("联系电话", ["mobile", "phone"]), ("学习经历", ["period", "school", "edu"]),
    ("获奖情况", ["award", "award"]), ("工作经历", ["period", "company", "position"]),
    ("紧急联系人", ["name", "mobile"]), ("开户信息", ["bank", "account"])]
# bracketed hints and instructions printed near fields; never a value
CHECK_HINTS = ["（请勾选）", "（请在□内打√）", "（单选）", "请勾选："]
HINTS = ["（使领馆人员填写）", "（由单位填写）", "（请用正楷填写）", "（如有请填写）", "（须与身份证一致）",
         "（此栏由审核人员填写）", "（工作人员填写）", "（选填）"]
SECTIONS = ["基本信息", "联系方式", "教育背景", "工作经历", "申请事项", "审核意见", "家庭情况", "单位信息",
            "健康状况", "承诺声明", "办理结果", "备注"]
NUMERALS = "一二三四五六七八"


def make_value(rng: random.Random, kind: str) -> str:
    """A plausible printed value for a label of this kind (check kinds: one of the options)."""
    if kind in CHECKS:
        return rng.choice(CHECKS[kind])
    return VALUES[kind](rng)


def pick_form(rng: random.Random, kind: str | None = None) -> tuple[str, list[Label]]:
    """(title, labels in a shuffled-but-plausible order: the first few keep their place)."""
    kind = kind or rng.choice(sorted(FORMS))
    titles, labels = FORMS[kind]
    head, tail = labels[:4], labels[4:]
    tail = rng.sample(tail, len(tail))
    return rng.choice(titles), head + tail


# --- tables inside forms -----------------------------------------------------------------------------
# A table is a header row naming its columns and one record per row (data/synth/form.py): member lists,
# résumés, education and work history, a signature block of approvals. kind -> (captions printed above
# or beside it, columns as (name, cell kind, relative width)). Cell kinds are make_value kinds or the
# row-aware ones `table_rows` fills: seq (1, 2, 3), start / end / period (a running time line), sign
# (a signature, often blank), note (mostly blank), duty (主席 first, then 委员), stage (one approval
# step a row), day (the approvals' dates, days apart).
Column = tuple[str, str, float]
TABLES: dict[str, tuple[list[str], list[Column]]] = {
    "members": (["项目组成员", "主要成员", "团队成员名单", "参加人员名单"],
                [("姓名", "name", 0.8), ("出生年月", "birth_ym", 0.9), ("专业", "major", 1.4),
                 ("本人签字", "sign", 0.9)]),
    "project": (["项目组主要成员", "课题组成员", "项目成员"],
                [("序号", "seq", 0.5), ("姓名", "name", 0.8), ("单位", "unit", 1.6), ("分工", "role", 1.1)]),
    "resume": (["个人简历", "学习和工作经历", "简历（从高中起填写）", "主要学习、工作经历"],
               [("起始年月", "start", 0.9), ("终止年月", "end", 0.9), ("学校或工作单位", "unit", 1.7),
                ("职务", "post", 0.8)]),
    "study": (["学习经历", "教育背景", "教育经历"],
              [("起止时间", "period", 1.2), ("学校", "school", 1.1), ("专业", "major", 1.2), ("学历", "edu", 0.8)]),
    "work": (["工作经历", "主要工作经历"],
             [("起止时间", "period", 1.2), ("工作单位", "company", 1.6), ("职务", "position", 0.8),
              ("证明人", "name", 0.7)]),
    "family": (["家庭主要成员", "家庭成员情况"],
               [("称谓", "relation", 0.6), ("姓名", "name", 0.8), ("出生年月", "birth_ym", 0.9),
                ("工作单位及职务", "company", 1.7)]),
    "approval": (["审批意见", "审核签字", "会签栏"],
                 [("审批环节", "stage", 1.1), ("意见", "opinion", 1.2), ("签字", "sign", 0.8), ("日期", "day", 1.0)]),
    "committee": (["答辩委员会", "论文评阅人及答辩委员会"],
                  [("姓名", "name", 0.8), ("职称", "title", 0.8), ("工作单位", "school", 1.4),
                   ("委员会职务", "duty", 0.9)]),
}
# sometimes one more column: inserted before the last one (a 备注 goes last)
EXTRA_COLUMNS: list[Column] = [("性别", "sex", 0.5), ("联系电话", "mobile", 1.3), ("职称", "title", 0.8),
                               ("备注", "note", 0.8)]
TABLE_VALUES: dict[str, Gen] = {
    "birth_ym": lambda r: (lambda y, m: r.choice([f"{y}.{m:02d}", f"{y}年{m}月", f"{y}-{m:02d}"]))(
        r.randint(1960, 2004), r.randint(1, 12)),
    "relation": lambda r: r.choice(["父亲", "母亲", "配偶", "子女", "兄弟", "姐妹"]),
    "unit": lambda r: r.choice([r.choice(SCHOOLS), r.choice(COLLEGES), V.company_name(r)]),
    "role": lambda r: r.choice(["项目负责人", "数据采集", "算法设计", "系统开发", "调研分析", "文献整理", "实验测试",
                                "财务管理", "技术指导"]),
    "post": lambda r: r.choice(["学生", "班长", "学习委员", "教师", "工程师", "部门经理", "科员", "无"]),
    "title": lambda r: r.choice(["教授", "副教授", "讲师", "研究员", "高级工程师", "助理研究员"]),
    "opinion": lambda r: r.choice(["同意", "同意申报", "情况属实，同意", "同意推荐", "拟同意"]),
    "sex": lambda r: r.choice("男女"),
}
STAGES = ["部门负责人", "分管领导", "人事处", "财务处", "学院意见", "主管部门", "单位审核"]


def _months(rng: random.Random, records: int) -> tuple[int, int]:
    return rng.randint(1990, 2025 - 4 * records), rng.choice([3, 7, 9, 9, 9])   # the last ends by 2025


def _cell(rng: random.Random, kind: str, r: int, start: str, end: str, dash: str, stages: list[str],
          day: dt.date) -> str:
    """One cell of record `r` (0-based); `start` / `end` are the record's times, `day` its signing date."""
    if kind == "seq":
        return str(r + 1)
    if kind in ("start", "end"):
        return start if kind == "start" else end
    if kind == "period":
        return start + dash + end
    if kind == "day":                  # one approval after another, days apart; unsigned steps undated
        return f"{day.year}年{day.month}月{day.day}日" if rng.random() < 0.7 else ""
    if kind == "stage":
        return stages[r % len(stages)]
    if kind == "duty":
        return "主席" if r == 0 else rng.choice(["委员", "委员", "秘书"])
    if kind == "sign":
        return V.person_name(rng) if rng.random() < 0.4 else ""
    if kind == "note":
        return rng.choice(["无", "在读", "已退休", "外聘"]) if rng.random() < 0.15 else ""
    return TABLE_VALUES[kind](rng) if kind in TABLE_VALUES else make_value(rng, kind)


def record_count(rng: random.Random, spare: tuple[int, ...] = (0, 0, 1, 2, 3)) -> tuple[int, int]:
    """(records, spare rows) of a table: 2-5 records most of the time; one in eight a blank table (no record,
    2-3 blank rows: the form was printed to be filled in by hand) and one in eight a single record over
    2-3 blank rows. Tables of fewer than two records must be ruled: nothing else shows their rows."""
    records = rng.choice([0, 1, 2, 2, 3, 3, 4, 5])
    return records, rng.choice([2, 3]) if records <= 1 else rng.choice(spare)


def table_rows(rng: random.Random, kind: str, records: int, spare: int = 0,
               extra: float = 0.3, seq: float = 0.35) -> tuple[str, list[Column], list[list[str]]]:
    """(caption, columns, rows) of a table of this kind: `records` filled rows (some cells blank, "")
    then `spare` blank rows (a printed 序号 kept in them, half the time), as a form leaves room for
    more. Times run forward from row to row; the first column holds a 序号 with probability `seq`."""
    captions, columns = TABLES[kind]
    cols = list(columns)
    if kind not in ("approval", "committee") and rng.random() < extra:
        col = rng.choice(EXTRA_COLUMNS)
        if col[0] not in {c[0] for c in cols}:
            cols.insert(len(cols) if col[1] == "note" else len(cols) - 1, col)
    if cols[0][1] != "seq" and kind != "approval" and rng.random() < seq:
        cols.insert(0, ("序号", "seq", 0.5))
    fmt = rng.choice(["{y}.{m:02d}", "{y}年{m}月", "{y}-{m:02d}", "{y}/{m:02d}"])
    dash = rng.choice(["-", "—", "至", "～"])
    year, month = _months(rng, records)
    stages = rng.sample(STAGES, min(records, len(STAGES)))
    day = _d(rng, (2018, 1, 1), (2025, 6, 1))
    rows: list[list[str]] = []
    for r in range(records):
        end_y, end_m = year + rng.choice([1, 2, 3, 3, 4]), rng.choice([6, 7, 12])
        now = r == records - 1 and dash != "至" and rng.random() < 0.4
        row = []
        for j, (_, ck, _) in enumerate(cols):
            text = _cell(rng, ck, r, fmt.format(y=year, m=month), "至今" if now else fmt.format(y=end_y, m=end_m),
                         dash, stages, day)
            key = j == 0 or (j == 1 and cols[0][1] == "seq")           # the column that names a record
            if not key and ck not in ("sign", "note") and rng.random() < 0.08:
                text = ""
            row.append(text)
        rows.append(row)
        day += dt.timedelta(days=rng.randint(0, 4))
        year, month = (end_y + 1, 1) if end_m == 12 else (end_y, rng.choice([7, 8, 9]))
    printed = rng.random() < 0.5
    rows += [[str(records + i + 1) if printed and ck == "seq" else "" for _, ck, _ in cols] for i in range(spare)]
    return rng.choice(captions), cols, rows
