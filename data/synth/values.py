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
    ("北京", "北京市", "西城区", "110102", "010"), ("上海", "上海市", "黄浦区", "310101", "021"),
    ("广东", "深圳市", "罗湖区", "440303", "0755"), ("浙江", "杭州市", "上城区", "330102", "0571"),
    ("浙江", "宁波市", "海曙区", "330203", "0574"), ("江苏", "苏州市", "虎丘区", "320505", "0512"),
    ("江苏", "南京市", "玄武区", "320102", "025"), ("四川", "成都市", "锦江区", "510104", "028"),
    ("湖北", "武汉市", "江岸区", "420102", "027"), ("山东", "济南市", "历下区", "370102", "0531"),
    ("福建", "厦门市", "思明区", "350203", "0592"), ("河北", "石家庄市", "长安区", "130102", "0311"),
    ("山西", "太原市", "小店区", "140105", "0351"), ("辽宁", "大连市", "中山区", "210202", "0411"),
    ("吉林", "长春市", "南关区", "220102", "0431"), ("黑龙江", "哈尔滨市", "道里区", "230102", "0451"),
    ("安徽", "合肥市", "蜀山区", "340104", "0551"), ("江西", "南昌市", "东湖区", "360102", "0791"),
    ("广西", "南宁市", "青秀区", "450103", "0771"), ("云南", "昆明市", "五华区", "530102", "0871"),
    ("贵州", "贵阳市", "南明区", "520102", "0851"), ("海南", "海口市", "龙华区", "460106", "0898"),
    ("甘肃", "兰州市", "城关区", "620102", "0931"), ("新疆", "乌鲁木齐市", "天山区", "650102", "0991"),
]
ROADS = ["中山路", "人民路", "解放路", "建设路", "和平路", "长江路", "科技园路", "创业大道", "滨海大道", "学院路",
         "文化路", "新华路", "东风路", "胜利街", "光明路", "北京路", "南京路", "高新一路", "软件园二路", "金融街",
         "青年路", "迎宾大道", "工业园路", "丰收路", "振兴路", "发展大道", "世纪大道", "桂花路", "环城北路",
         "望江路", "朝阳街", "花园路", "黄河路", "珠江路", "民主路", "湖滨路", "天府大道", "经开大道"]
BUILDINGS = ["", "", "", "A座", "B座", "科技大厦", "国际中心", "金融大厦", "创新园", "商务楼", "1号楼", "3栋",
             "万达广场", "时代广场", "产业园", "孵化器", "工业园", "写字楼"]
SURNAMES = list("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏"
                "魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵"
                "万钱严覃武戴莫孔向汤") + ["欧阳", "司马", "诸葛", "上官"]
GIVEN = list("伟芳娜秀英敏静丽强磊军洋勇艳杰娟涛明超秀兰霞平刚桂英华飞玉萍红娥玲芬燕彬鹏辉宇浩然子轩梓涵"
             "一诺欣怡雨泽思远佳琪俊杰晓东建国志强文博嘉怡婷婷")
NAME_CHARS = list("华信恒达瑞鑫博远泰安盛创新科智联通宏兴嘉德和海天金明中方正云星光启航源融昌隆丰汇众"
                  "永诚佳美亿龙腾飞祥润泽晨阳辰睿锦绣顺意腾跃卓越优品鼎晟弘毅凯旋朗峰宇浩川")
INDUSTRIES = ["科技", "信息技术", "贸易", "餐饮管理", "电子", "建筑工程", "文化传媒", "物流", "医疗器械", "商贸",
              "食品", "机械设备", "网络科技", "咨询服务", "印刷", "新能源", "供应链管理", "教育科技", "环保科技",
              "生物科技", "智能科技", "汽车服务", "家居用品", "服饰", "农业开发", "房地产开发", "物业管理",
              "广告", "会展服务", "装饰工程", "化工", "电气设备", "软件", "数据科技", "酒店管理", "健康管理"]
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
    ("经纪代理服务", "代理服务费", [""], "项", (500, 20000), 6),
    ("广告服务", "广告发布费", [""], "项", (2000, 60000), 6),
    ("租赁服务", "房屋租赁费", [""], "月", (1500, 30000), 9),
    ("物业服务", "物业管理费", [""], "月", (300, 8000), 6),
    ("会议服务", "会议费", [""], "次", (1000, 40000), 6),
    ("培训服务", "培训费", [""], "人", (300, 5000), 6),
    ("通信设备", "路由器", ["AX3000", "TL-WDR5620"], "台", (120, 900), 13),
    ("计算机外部设备", "激光打印机", ["M1136", "LBP2900"], "台", (800, 3000), 13),
    ("计算机外部设备", "硒鼓", ["CC388A", "12A"], "个", (60, 400), 13),
    ("办公设备", "碎纸机", ["S1200"], "台", (200, 1200), 13),
    ("家具", "办公椅", ["人体工学", "网布"], "把", (180, 1500), 13),
    ("家具", "办公桌", ["1.4m", "1.6m"], "张", (400, 2500), 13),
    ("电线电缆", "电线", ["BV2.5", "BV4"], "卷", (150, 400), 13),
    ("五金", "不锈钢螺丝", ["M6*20", "M8*30"], "千个", (40, 200), 13),
    ("劳保用品", "劳保手套", ["", "加厚"], "副", (2, 15), 13),
    ("清洁用品", "洗手液", ["500ml"], "瓶", (10, 40), 13),
    ("饮料", "矿泉水", ["550ml*24"], "箱", (24, 60), 13),
    ("茶叶", "绿茶", ["250g"], "盒", (80, 600), 13),
    ("水果", "苹果", ["5kg"], "箱", (40, 150), 9),
    ("医疗器械", "医用口罩", ["50只/盒"], "盒", (10, 60), 13),
    ("药品", "布洛芬缓释胶囊", ["0.3g*24粒"], "盒", (12, 30), 13),
    ("汽车配件", "机油滤清器", ["W712"], "个", (25, 90), 13),
    ("化学试剂", "无水乙醇", ["500ml AR"], "瓶", (15, 60), 13),
    ("邮政服务", "快递服务费", [""], "次", (8, 200), 6),
    ("餐饮服务", "工作餐", [""], "份", (15, 60), 6),
]
RECEIPT_GOODS = ["可口可乐500ml", "农夫山泉550ml", "康师傅红烧牛肉面", "伊利纯牛奶250ml", "德芙巧克力", "乐事薯片",
                 "清风抽纸", "舒肤佳香皂", "蓝月亮洗衣液", "金龙鱼大米5kg", "鸡蛋10枚", "苹果", "香蕉", "面包",
                 "拿铁咖啡", "美式咖啡", "宫保鸡丁", "鱼香肉丝", "米饭", "酸梅汤", "青岛啤酒", "雪碧330ml",
                 "维达卷纸", "海天酱油500ml", "鲁花花生油5L", "统一冰红茶", "王老吉310ml", "奥利奥饼干", "旺仔牛奶",
                 "卫龙辣条", "好丽友派", "百事可乐", "三只松鼠坚果", "娃哈哈AD钙奶", "蒙牛酸奶", "农夫果园",
                 "红烧肉", "水煮鱼", "麻婆豆腐", "番茄炒蛋", "酸辣土豆丝", "扬州炒饭", "小笼包", "豆浆", "油条",
                 "卡布奇诺", "抹茶拿铁", "芒果", "西瓜", "葡萄", "五花肉", "鸡胸肉", "大白菜", "西红柿"]
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
    """City + brand + industry + form, in the arrangements registrations allow: 北京华信科技有限公司,
    华信（北京）科技有限公司, 华信恒科技有限公司, and branch offices (…有限公司上海分公司)."""
    city = (where or place(rng))[1].rstrip("市")
    brand = "".join(rng.sample(NAME_CHARS, rng.choice((2, 2, 2, 3))))
    industry, form = rng.choice(INDUSTRIES), rng.choice(COMPANY_FORMS)
    r = rng.random()
    if r < 0.65:
        name = f"{city}{brand}{industry}{form}"
    elif r < 0.8:
        name = f"{brand}（{city}）{industry}{form}"
    else:
        name = f"{brand}{industry}{form}"
    if rng.random() < 0.06:
        name += f"{place(rng)[1].rstrip('市')}分公司"
    return name


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


# --- business licence contents --------------------------------------------------------------------

COMPANY_TYPES = ["有限责任公司（自然人投资或控股）", "有限责任公司（自然人独资）", "有限责任公司（法人独资）",
                 "其他有限责任公司", "股份有限公司（非上市、自然人投资或控股）", "有限责任公司（港澳台法人独资）",
                 "个人独资企业", "有限合伙企业", "有限责任公司（国有独资）"]
SCOPE_PHRASES = ["技术开发", "技术咨询", "技术服务", "技术转让", "软件开发", "信息系统集成服务",
                 "数据处理和存储支持服务", "计算机系统服务", "销售电子产品", "销售计算机、软件及辅助设备", "销售日用品",
                 "销售五金交电", "货物进出口", "技术进出口", "代理进出口", "企业管理咨询", "市场营销策划",
                 "会议及展览服务", "设计、制作、代理、发布广告", "组织文化艺术交流活动",
                 "道路货物运输（不含危险货物）", "仓储服务（不含危险化学品）", "餐饮服务",
                 "食品经营", "物业管理", "房地产经纪", "机械设备租赁", "建筑装饰工程施工", "家政服务",
                 "教育咨询服务（不含涉许可审批的教育培训活动）", "医疗器械经营", "第二类增值电信业务", "互联网信息服务",
                 "新能源技术推广服务", "工程和技术研究和试验发展", "环境保护专用设备销售", "农产品的生产、销售、加工"]
SCOPE_TAIL = ["（依法须经批准的项目，经相关部门批准后方可开展经营活动）",
              "（除依法须经批准的项目外，凭营业执照依法自主开展经营活动）", ""]


def business_scope(rng: random.Random) -> str:
    """经营范围: several activities joined by 、 and ；, usually ending with the standard proviso."""
    items = rng.sample(SCOPE_PHRASES, rng.randint(3, 9))
    groups, i = [], 0
    while i < len(items):
        n = rng.randint(1, 3)
        groups.append("、".join(items[i:i + n]))
        i += n
    head = "一般项目：" if rng.random() < 0.3 else ""
    return head + "；".join(groups) + "。" + rng.choice(SCOPE_TAIL)


def registered_capital(rng: random.Random) -> str:
    """注册资本 in 大写 as licences print it: 壹佰万元整, 人民币伍佰万元整 (元, not the invoices' 圆)."""
    wan = rng.choice((3, 5, 10, 10, 20, 30, 50, 50, 100, 100, 200, 300, 500, 500, 1000, 1000, 2000, 3000,
                      5000, 10000, rng.randint(1, 9999)))
    words = format_amount_words(wan * 10000).replace("圆", "元")
    return ("人民币" if rng.random() < 0.25 else "") + words


def authority(rng: random.Random, where: tuple) -> str:
    """The registering 市场监督管理局 of a district or city."""
    _, city, district, _, _ = where
    return rng.choice([f"{city}{district}市场监督管理局", f"{city}市场监督管理局", f"{city}{district}市场监督管理局"])


# --- train tickets ------------------------------------------------------------------------------------

# (station, pinyin as printed under the name)
STATIONS = [("北京南", "Beijingnan"), ("北京西", "Beijingxi"), ("上海虹桥", "Shanghaihongqiao"), ("上海", "Shanghai"),
            ("南京南", "Nanjingnan"), ("杭州东", "Hangzhoudong"), ("广州南", "Guangzhounan"), ("深圳北", "Shenzhenbei"),
            ("武汉", "Wuhan"), ("长沙南", "Changshanan"), ("西安北", "Xi'anbei"), ("郑州东", "Zhengzhoudong"),
            ("成都东", "Chengdudong"), ("重庆北", "Chongqingbei"), ("天津西", "Tianjinxi"), ("济南西", "Jinanxi"),
            ("合肥南", "Hefeinan"), ("苏州", "Suzhou"), ("无锡东", "Wuxidong"), ("青岛北", "Qingdaobei"),
            ("沈阳北", "Shenyangbei"), ("福州南", "Fuzhounan"), ("厦门北", "Xiamenbei"), ("昆明南", "Kunmingnan"),
            ("贵阳北", "Guiyangbei"), ("南昌西", "Nanchangxi"), ("石家庄", "Shijiazhuang"), ("太原南", "Taiyuannan"),
            ("哈尔滨西", "Ha'erbinxi"), ("宁波", "Ningbo"), ("徐州东", "Xuzhoudong"), ("兰州西", "Lanzhouxi")]
# train prefix -> (classes with price range per 100 km, seat style)
TRAIN_KINDS = {
    "G": ([("二等座", 45), ("一等座", 75), ("商务座", 145)], "high"),
    "D": ([("二等座", 30), ("一等座", 48)], "high"),
    "C": ([("二等座", 30), ("一等座", 48)], "high"),
    "K": ([("硬座", 8), ("硬卧", 15), ("软卧", 23)], "normal"),
    "T": ([("硬座", 9), ("硬卧", 16), ("软卧", 25)], "normal"),
    "Z": ([("硬卧", 17), ("软卧", 26)], "normal"),
}


def masked_id(rng: random.Random, number: str) -> str:
    """The masked ID printed on tickets: 3201**********1234 (older) or 3201051990****1234."""
    return number[:4] + "*" * 10 + number[-4:] if rng.random() < 0.5 else number[:10] + "****" + number[-4:]
