"""Realistic field values for synthetic documents, drawn from a `random.Random` so a seed fixes them.

Identifiers carry correct check characters (GB 11643 ID numbers, GB 32100 credit codes with a valid
GB 11714 organisation code inside), invoice arithmetic holds to the cent, and 大写 matches 小写.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from data.normalize import format_amount_words
from data.validate import CREDIT_ALPHABET, credit_check_char, id_check_char, org_code_check_char

# (province short, city, district, 6-digit district code, phone area code)
PLACES = [
    ("北京", "北京市", "朝阳区", "110105", "010"), ("北京", "北京市", "海淀区", "110108", "010"),
    ("北京", "北京市", "东城区", "110101", "010"), ("上海", "上海市", "徐汇区", "310104", "021"),
    ("上海", "上海市", "浦东新区", "310115", "021"), ("广东", "深圳市", "南山区", "440305", "0755"),
    ("广东", "深圳市", "福田区", "440304", "0755"), ("广东", "广州市", "天河区", "440106", "020"),
    ("浙江", "杭州市", "西湖区", "330106", "0571"), ("江苏", "南京市", "鼓楼区", "320106", "025"),
    ("四川", "成都市", "武侯区", "510107", "028"), ("湖北", "武汉市", "武昌区", "420106", "027"),
    ("陕西", "西安市", "雁塔区", "610113", "029"), ("山东", "青岛市", "市南区", "370202", "0532"),
    ("福建", "福州市", "鼓楼区", "350102", "0591"), ("天津", "天津市", "和平区", "120101", "022"),
    ("重庆", "重庆市", "渝中区", "500103", "023"), ("湖南", "长沙市", "岳麓区", "430104", "0731"),
    ("河南", "郑州市", "金水区", "410105", "0371"), ("辽宁", "沈阳市", "和平区", "210102", "024"),
]
ROADS = ["中山路", "人民路", "解放路", "建设路", "和平路", "长江路", "科技园路", "创业大道", "滨海大道", "学院路",
         "文化路", "新华路", "东风路", "胜利街", "光明路", "北京路", "南京路", "高新一路", "软件园二路", "金融街"]
BUILDINGS = ["", "", "", "A座", "B座", "科技大厦", "国际中心", "金融大厦", "创新园", "商务楼"]
SURNAMES = list("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏"
                "魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵"
                "万钱严覃武戴莫孔向汤") + ["欧阳", "司马", "诸葛", "上官"]
GIVEN = list("伟芳娜秀英敏静丽强磊军洋勇艳杰娟涛明超秀兰霞平刚桂英华飞玉萍红娥玲芬燕彬鹏辉宇浩然子轩梓涵"
             "一诺欣怡雨泽思远佳琪俊杰晓东建国志强文博嘉怡婷婷")
NAME_CHARS = list("华信恒达瑞鑫博远泰安盛创新科智联通宏兴嘉德和海天金明中方正云星光启航源融昌隆丰汇众")
INDUSTRIES = ["科技", "信息技术", "贸易", "餐饮管理", "电子", "建筑工程", "文化传媒", "物流", "医疗器械", "商贸",
              "食品", "机械设备", "网络科技", "咨询服务", "印刷", "新能源", "供应链管理", "教育科技", "环保科技"]
COMPANY_FORMS = ["有限公司", "有限公司", "有限公司", "股份有限公司", "有限责任公司"]
BANKS = ["中国工商银行", "中国建设银行", "中国农业银行", "中国银行", "交通银行", "招商银行", "中信银行",
         "上海浦东发展银行", "兴业银行", "中国民生银行", "平安银行"]
ETHNICITIES = ["汉"] * 12 + ["回", "满", "蒙古", "壮", "藏", "维吾尔", "苗", "彝", "土家", "朝鲜"]

# (category, name, specs, unit, price range, tax rate)
GOODS = [
    ("信息技术服务", "软件开发服务", [""], "项", (2000, 80000), 6),
    ("信息技术服务", "技术服务费", [""], "次", (500, 20000), 6),
    ("现代服务", "咨询服务费", [""], "项", (1000, 30000), 6),
    ("餐饮服务", "餐饮服务", [""], "次", (80, 3000), 6),
    ("住宿服务", "住宿费", ["标准间", "大床房"], "天", (200, 900), 6),
    ("计算机外部设备", "显示器", ["27英寸", "24英寸", "P2422H"], "台", (700, 3500), 13),
    ("计算机", "笔记本电脑", ["ThinkPad E14", "MateBook 14"], "台", (3500, 9000), 13),
    ("纸制品", "复印纸", ["A4 70g", "A4 80g", "A3 70g"], "箱", (90, 260), 13),
    ("文具", "中性笔", ["0.5mm黑色", "0.38mm"], "盒", (12, 48), 13),
    ("日用杂品", "保温袋", ["", "大号"], "个", (5, 40), 13),
    ("电子元件", "贴片电阻", ["0805 10K", "0603 1K"], "千只", (8, 30), 13),
    ("塑料制品", "收纳箱", ["60L"], "个", (25, 90), 13),
    ("运输服务", "国内货物运输服务", [""], "次", (300, 8000), 9),
    ("建筑服务", "工程服务", [""], "项", (5000, 200000), 9),
    ("谷物", "大米", ["5kg", "10kg"], "袋", (30, 120), 9),
    ("图书", "图书", ["", "平装"], "册", (20, 120), 9),
    ("乳制品", "纯牛奶", ["250ml*24"], "箱", (45, 90), 9),
    ("汽油", "92号车用汽油", ["VIA"], "升", (7, 9), 13),
    ("供电", "电费", [""], "千瓦时", (0.5, 1.2), 13),
    ("劳务", "劳务服务费", [""], "项", (800, 15000), 3),
]
RECEIPT_GOODS = ["可口可乐500ml", "农夫山泉550ml", "康师傅红烧牛肉面", "伊利纯牛奶250ml", "德芙巧克力", "乐事薯片",
                 "清风抽纸", "舒肤佳香皂", "蓝月亮洗衣液", "金龙鱼大米5kg", "鸡蛋10枚", "苹果", "香蕉", "面包",
                 "拿铁咖啡", "美式咖啡", "宫保鸡丁", "鱼香肉丝", "米饭", "酸梅汤", "青岛啤酒", "雪碧330ml"]
PAYMENTS = ["微信支付", "支付宝", "现金", "银联卡", "云闪付"]

_CENT = Decimal("0.01")


def money(value: Decimal | float) -> Decimal:
    return Decimal(str(value)).quantize(_CENT, rounding=ROUND_HALF_UP)


def person_name(rng: random.Random) -> str:
    return rng.choice(SURNAMES) + "".join(rng.choice(GIVEN) for _ in range(rng.choice((1, 2, 2))))


def place(rng: random.Random) -> tuple[str, str, str, str, str]:
    return rng.choice(PLACES)


def address(rng: random.Random, where: tuple | None = None, short: bool = False) -> str:
    _, city, district, _, _ = where or place(rng)
    street = f"{rng.choice(ROADS)}{rng.randint(1, 999)}号"
    if short:
        return f"{city}{district}{street}"
    building = rng.choice(BUILDINGS)
    room = f"{rng.randint(1, 30)}{rng.randint(1, 20):02d}室" if building else ""
    return f"{city}{district}{street}{building}{room}"


def phone(rng: random.Random, where: tuple | None = None, mobile: bool | None = None) -> str:
    if mobile if mobile is not None else rng.random() < 0.3:
        return rng.choice(["13", "15", "18", "17", "19"]) + "".join(str(rng.randint(0, 9)) for _ in range(9))
    code = (where or place(rng))[4]
    digits = 8 if len(code) == 3 or code in ("0755", "0571", "0532") else 8
    return f"{code}-{rng.randint(2, 8)}" + "".join(str(rng.randint(0, 9)) for _ in range(digits - 1))


def company_name(rng: random.Random, where: tuple | None = None) -> str:
    city = (where or place(rng))[1].rstrip("市")
    brand = "".join(rng.sample(NAME_CHARS, 2))
    prefix = city if rng.random() < 0.8 else ""
    return f"{prefix}{brand}{rng.choice(INDUSTRIES)}{rng.choice(COMPANY_FORMS)}"


def bank_account(rng: random.Random, where: tuple | None = None) -> str:
    _, city, district, _, _ = where or place(rng)
    digits = "".join(str(rng.randint(0, 9)) for _ in range(rng.choice((16, 17, 19))))
    branch = f"{city.rstrip('市')}{district.rstrip('区新')}支行" if rng.random() < 0.7 else f"{city.rstrip('市')}分行"
    return f"{rng.choice(BANKS)}{branch} {digits}"


def credit_code(rng: random.Random, where: tuple | None = None) -> str:
    """GB 32100 code: 9 (industry & commerce) + 1 (enterprise) + district + organisation code."""
    region = (where or place(rng))[3]
    org_chars = "0123456789" * 3 + "ABCDEFGHJKLMNPQRTUWXY"
    while True:
        org8 = "".join(rng.choice(org_chars) for _ in range(8))
        org9 = org8 + org_code_check_char(org8)
        if all(c in CREDIT_ALPHABET for c in org9):
            break
    first17 = rng.choice(["91", "91", "91", "92", "12"]) + region + org9
    return first17 + credit_check_char(first17)


def id_number(rng: random.Random, birth: dt.date, male: bool, where: tuple | None = None) -> str:
    region = (where or place(rng))[3]
    seq = rng.randint(0, 99) * 10 + rng.choice((1, 3, 5, 7, 9) if male else (0, 2, 4, 6, 8))
    first17 = f"{region}{birth:%Y%m%d}{seq:03d}"
    return first17 + id_check_char(first17)


def date_between(rng: random.Random, start: dt.date, end: dt.date) -> dt.date:
    return start + dt.timedelta(days=rng.randint(0, (end - start).days))


def digits(rng: random.Random, n: int) -> str:
    return "".join(str(rng.randint(0, 9)) for _ in range(n))


# --- invoice contents --------------------------------------------------------------------------------

@dataclass
class Item:
    name: str
    spec: str
    unit: str
    quantity: str        # as printed
    unit_price: str      # as printed (invoices print up to 8 decimals)
    amount: str          # two places
    tax_rate: str        # "13%"
    tax: str             # two places


def invoice_items(rng: random.Random, n: int) -> list[Item]:
    items = []
    for _ in range(n):
        cat, name, specs, unit, (lo, hi), rate = rng.choice(GOODS)
        if unit in ("项", "次") and rng.random() < 0.6:
            qty = Decimal(1)
        elif unit == "升" or unit == "千瓦时":
            qty = Decimal(rng.randint(1000, 99999)) / 100
        else:
            qty = Decimal(rng.randint(1, 60))
        if rng.random() < 0.5:
            # price excluding tax derived from a round gross price, as billing software does:
            # many decimals on the unit price, the amount rounded to the cent
            gross = Decimal(rng.randint(int(lo * 100), int(hi * 100))) / 100
            price = (gross / (1 + Decimal(rate) / 100)).quantize(Decimal("0.00000001"), rounding=ROUND_HALF_UP)
            price_text = f"{price.normalize():f}"
            if "." in price_text and len(price_text.split(".")[1]) < 2:
                price_text = f"{price:.2f}"
        else:
            price = Decimal(rng.randint(int(lo * 100), int(hi * 100))) / 100
            price_text = f"{price:.2f}"
        amount = money(qty * Decimal(price_text))
        tax = money(amount * rate / 100)
        qty_text = f"{qty.normalize():f}"
        items.append(Item(f"*{cat}*{name}", rng.choice(specs), unit, qty_text, price_text,
                          f"{amount:.2f}", f"{rate}%", f"{tax:.2f}"))
    return items


@dataclass
class Totals:
    amount: str
    tax: str
    with_tax: str
    words: str


def totals(items: list[Item]) -> Totals:
    amount = sum((Decimal(i.amount) for i in items), Decimal(0))
    tax = sum((Decimal(i.tax) for i in items), Decimal(0))
    return Totals(f"{amount:.2f}", f"{tax:.2f}", f"{amount + tax:.2f}", format_amount_words(amount + tax))


def cipher_lines(rng: random.Random, n: int = 4, width: int = 27) -> list[str]:
    """The 密码区: rows of digits and operators."""
    alphabet = "0123456789" * 2 + "+-*/<>"
    return ["".join(rng.choice(alphabet) for _ in range(width)) for _ in range(n)]


def format_date_cn(d: dt.date, zero_pad: bool = True) -> str:
    return f"{d.year}年{d.month:02d}月{d.day:02d}日" if zero_pad else f"{d.year}年{d.month}月{d.day}日"
