"""The category taxonomy: a fixed list of what tools are for, across servers, and the rule that
derives a tool's category from its words (docs/catalog.md, "Categories").

The rule is keyword scoring, deliberately simple and explainable: every category has a list of
words (and a few phrases), each with a weight; a word found in the tool's name counts 3×, in its
title 2×, in its server's name 1.5×, in the first 300 characters of its description 1×. The
category with the highest total wins (ties: the earlier in CATEGORIES); below MIN_SCORE it is
`other`. No model is needed, so a keyword-only crawl and a crawl with vectors agree, and
`explain()` says which words decided. Measured against a hand-labelled sample in
`tests/data/categories/labelled.jsonl` (tests/core/test_taxonomy.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

OTHER = "other"
MIN_SCORE = 1.5
FIELD_WEIGHTS = {"name": 3.0, "title": 2.0, "server": 1.5, "description": 1.0}
DESCRIPTION_CHARS = 300


@dataclass(frozen=True)
class Category:
    name: str
    definition: str
    keywords: str  # "word:weight word ..." (weight 1 when left out); `a_b` is the phrase "a b"


CATEGORIES: tuple[Category, ...] = (
    Category(
        "version-control",
        "Git and code hosting: repositories, commits, branches, diffs, pull requests, GitHub/GitLab issues.",
        "git:3 github:3 gitlab:3 bitbucket:3 commit:2 branch:2 repository:2 repo:2 pull_request:3 "
        "rebase:3 checkout:1.5 stash:2 clone:1 fork:1 blame:2 cherry-pick:2 staged:1.5 unstaged:2 "
        "working_tree:2 merge_request:3 gist:2",
    ),
    Category(
        "browser",
        "Browser automation and web page inspection: navigate, click, type, screenshots, DOM, tabs, devtools.",
        "browser:3 playwright:3 puppeteer:3 selenium:3 devtools:3 chrome:1.5 navigate:1.5 click:2 "
        "hover:2 scroll:1.5 keyboard:1.5 press_key:2 dom:2 css:1.5 viewport:2 screenshot:1 tab:1 "
        "iframe:2 webpage:1 web_page:1 lighthouse:2 drag:1 "
        "console_message:2 network_request:2",
    ),
    Category(
        "documents",
        "Documents and presentations: Word, PDF, slides, Markdown; create, read, convert, format.",
        "document:1.5 docx:3 word_document:3 pdf:2.5 paragraph:2 heading:1.5 footnote:2 "
        "presentation:3 slide:3 powerpoint:3 ppt:3 pptx:3 markdown:1 bullet:2 font:1.5 "
        "table_of_contents:2 placeholder:1 word:1 docs:0.5 ocr:1",
    ),
    Category(
        "spreadsheets",
        "Spreadsheets and tabular files: Excel, Google Sheets, CSV; sheets, cells, ranges, formulas, pivots.",
        "spreadsheet:3 excel:3 xlsx:3 sheet:2.5 worksheet:3 workbook:3 cell:1.5 csv:2 formula:2 "
        "pivot:2.5 pivottable:3 slicer:2.5 row:0.5 column:0.5 range:0.5",
    ),
    Category(
        "databases",
        "Databases and data stores: SQL queries, tables, schemas, indexes, collections, records, vector stores.",
        "database:3 sql:3 sqlite:3 postgres:3 postgresql:3 mysql:3 query:1 table:1 schema:0.5 "
        "redis:3 mongodb:3 mongo:3 elasticsearch:3 collection:1 record:1 supabase:3 vector:1 "
        "chroma:3 pinecone:3 meilisearch:3 snowflake:3 bigquery:3 clickhouse:3 dynamodb:3 "
        "airtable:3 aitable:3 datasheet:2 flink:2 kafka:2 jdbc:3 index:0.5 dataset:1 db:2",
    ),
    Category(
        "files",
        "Local files and folders: read, write, edit, list, move, search files and directories.",
        "file:1.5 folder:2 directory:2.5 directories:2.5 path:0.5 filesystem:3 file_system:3 "
        "glob:2 grep:1.5 ripgrep:2 text_file:2 disk:1 rename:1 move:0.5 line:0.5",
    ),
    Category(
        "web-search",
        "Searching the web and reference sources: search engines, news, Wikipedia, papers, trends.",
        "web_search:3 search_engine:3 google:1 bing:3 duckduckgo:3 searxng:3 brave:2 serp:2 "
        "news:1.5 wikipedia:3 arxiv:3 paper:1.5 scholar:2 pubmed:2 trend:1.5 trending:1.5 "
        "article:1 search:1 搜索:2 新闻:2",
    ),
    Category(
        "web-fetch",
        "Fetching and scraping web pages: URLs to text or Markdown, crawling sites, sitemaps, extraction.",
        "fetch:2 url:1.5 scrape:3 scraping:3 scraper:3 crawl:2 crawler:2 sitemap:3 html:1 "
        "website:1 firecrawl:3 web_content:2 http:0.5 download:0.5 deepwiki:1",
    ),
    Category(
        "knowledge",
        "Notes, knowledge bases and agent memory: knowledge graphs, entities, wikis, "
        "Notion/Obsidian pages, RAG collections.",
        "memory:3 knowledge:3 knowledge_graph:3 entity:2 entities:2 observation:2 relation:1.5 "
        "node:1 note:2 notion:3 obsidian:3 vault:1.5 wiki:2 confluence:2 rag:2 remember:2 "
        "recall:1.5 context:0.5 heptabase:3 tana:2 logseq:3 roam:2 page:0.5 block:0.5 "
        "bookmark:1.5 zettel:3",
    ),
    Category(
        "messaging",
        "Communication and social networks: email, chat, SMS, channels, forums, posts, contacts.",
        "message:2 email:2 mail:2 gmail:3 slack:3 discord:3 teams:1.5 telegram:3 whatsapp:3 "
        "sms:3 chat:1.5 channel:1.5 thread:1.5 reply:1.5 contact:1 tweet:3 twitter:3 reddit:3 "
        "subreddit:3 forum:2 post:0.5 comment:0.5 hackernews:3 hacker_news:3 linkedin:2 "
        "social:1.5 follower:2 following:2 mention:1.5 inbox:2 notification:1 imessage:3 "
        "mastodon:3 bluesky:3 send:0.5",
    ),
    Category(
        "calendar-tasks",
        "Calendars and work planning: events, meetings, scheduling, to-dos, "
        "tasks, project boards, issues in trackers, time tracking.",
        "calendar:3 event:0.7 meeting:2.5 schedule:1.5 appointment:3 todo:3 to-do:3 task:2 "
        "reminder:2 agenda:2 due:1 jira:3 jql:3 trello:3 asana:3 clickup:3 todoist:3 sprint:3 "
        "kanban:2 milestone:1.5 backlog:2 standup:1.5 timesheet:2 time_entry:2 clockify:3 "
        "issue:0.5 project:0.5 plane:1 board:0.5 epic:2 worklog:2 ticket:0.5",
    ),
    Category(
        "maps",
        "Maps, places and travel: geocoding, directions, nearby places, geospatial analysis, flights, trains, lodging.",
        "map:1.5 maps:2 location:1.5 geocode:3 geocoding:3 latitude:2 longitude:2 coordinate:1.5 "
        "route:1.5 direction:1 place:1.5 osm:3 openstreetmap:3 gis:3 geospatial:3 geometry:1.5 "
        "spatial:2 nearby:2 neighborhood:2 flight:3 airport:3 train:2 hotel:2 travel:2 airbnb:3 "
        "itinerary:2 distance:0.5 地图:3 车票:3 火车:3 航班:3",
    ),
    Category(
        "finance",
        "Money and markets: stocks, crypto and blockchains, prices, payments, invoices, accounting, budgets.",
        "stock:2.5 price:1.5 market:1.5 crypto:3 cryptocurrency:3 bitcoin:3 ethereum:3 "
        "blockchain:3 token:1 wallet:2 coin:1.5 trading:2 trade:1.5 exchange_rate:3 "
        "currency:2 finance:3 financial:3 invoice:3 payment:3 billing:2 subscription:1 "
        "budget:2 bank:2 earning:2.5 dividend:3 ticker:2 ohlcv:3 etf:3 fund:1.5 portfolio:2 "
        "nft:3 defi:3 evm:3 transaction:1.5 chain:1 accounting:3 tax:1.5 revenue:1 "
        "polymarket:3 web3:3 prediction_market:3 ens:1 solana:3 swap:1 investor:2 股票:3 金融:3 "
        "kospi:3 yahoo_finance:3 onchain:3 ledger:1.5 ordinal:1",
    ),
    Category(
        "weather",
        "Weather: current conditions, forecasts, alerts, climate readings.",
        "weather:4 forecast:3 temperature:1.5 precipitation:3 rain:2 wind:1.5 climate:2 humidity:3 storm:2 天气:4",
    ),
    Category(
        "code-execution",
        "Running code and commands: shells, terminals, processes, sandboxes, notebooks, scripts.",
        "execute:1 run:1 command:2 shell:3 terminal:3 bash:3 script:1.5 process:1 sandbox:3 "
        "run_code:3 execute_code:3 interpreter:3 notebook:1.5 jupyter:3 repl:3 rpa:2 exec:2 "
        "powershell:3 cmd:2",
    ),
    Category(
        "developer-tools",
        "Software development aids: packages and dependencies, library and API "
        "docs, UI components, code analysis, debugging, IDEs, app stores, test utilities.",
        "npm:3 package:2 dependency:2 dependencies:2 maven:3 pypi:3 library:1.5 api:0.5 sdk:2 "
        "component:1.5 ui:1.5 icon:1.5 debug:2 debugger:2 debugging:2 console:1 lint:3 "
        "linter:3 test:0.5 code:2 source_code:2 function:0.5 compile:2 build:1 ide:2 "
        "editor:1 documentation:1.5 docs:1 echo:1.5 environment_variable:2 react:2 "
        "reverse_engineering:3 disassemble:3 decompile:3 binary:1 xcode:3 android:2 ios:2 "
        "app_store:2 openapi:2 swagger:2 postman:3 graphql:2 regex:1.5 snippet:2 codebase:2 "
        "shadcn:3 tailwind:3 ida:2 vscode:3 neovim:3 vim:2 unity:2 bundle:1 "
        "liveblocks:2 framework:1.5",
    ),
    Category(
        "time",
        "Time and dates: current time, time zones, date arithmetic and conversion.",
        "time:1.5 timezone:3 time_zone:3 current_time:3 clock:2 date:1 utc:2 datetime:2 timestamp:2 时间:3",
    ),
    Category(
        "math",
        "Calculation and reasoning aids: arithmetic, expressions, statistics, random numbers, step-by-step thinking.",
        "calculate:3 calculation:3 calculator:3 math:3 mathematical:3 sum:2 equation:3 "
        "arithmetic:3 random:2 number:1 statistic:1.5 statistics:1.5 expression:1.5 solve:1.5 "
        "thinking:2 thought:2 reasoning:2 problem-solving:2 dice:2 flip:1.5 integer:1 float:1",
    ),
    Category(
        "media",
        "Images, audio, video and visuals: generate, edit, convert, transcribe; charts, diagrams, 3D scenes.",
        "image:2.5 photo:2.5 picture:2 video:3 audio:3 music:3 sound:2 song:2 transcript:2 "
        "youtube:2 chart:2.5 diagram:3 mermaid:3 mindmap:3 mind_map:3 svg:2 draw:2 drawing:2 "
        "canvas:2 paint:2 3_d:2 blender:3 render:1 ffmpeg:3 thumbnail:2 visualize:2 "
        "visualization:2 plot:2 speech:2 voice:2 vocal:2 tts:3 midi:3 stability:1.5 "
        "dall-e:3 painter:2 camera:1.5",
    ),
    Category(
        "cloud-devops",
        "Cloud and operations: deployments, containers, Kubernetes, cloud "
        "accounts and storage, monitoring, logs, incidents, DNS and networks.",
        "cloud:2.5 aws:3 gcp:3 azure:3 s3:3 kubernetes:3 k8s:3 docker:3 container:2 deploy:2.5 "
        "deployment:2.5 instance:1 cluster:2 monitor:2 monitoring:2 alert:0.5 log:1.5 "
        "logs:1.5 metric:1.5 metrics:1.5 incident:2 uptime:1.5 infrastructure:3 terraform:3 "
        "helm:3 argo:2 argocd:3 pipeline:1 heroku:3 netlify:3 vercel:3 cloudflare:2 dns:3 "
        "domain:1.5 whois:3 network:1 mqtt:2 iot:2 storage:1.5 bucket:2.5 gateway:1.5 "
        "datadog:3 grafana:3 prometheus:3 truenas:3 nas:1 devops:3 region:1 zabbix:3 "
        "observability:3 tld:2 vm:2 virtual_machine:3 serverless:3",
    ),
    Category(
        "security",
        "Security: vulnerability scans, threat intelligence, secrets, encryption, "
        "firewalls, access and credentials, network traffic analysis.",
        "security:4 vulnerability:3 vulnerabilities:3 vuln:3 cve:3 threat:3 malware:3 scan:1.5 "
        "secret:2 encrypt:2 decrypt:2 encryption:2 password:1.5 credential:2 credentials:2 "
        "authentication:1.5 oauth:2 firewall:3 waf:3 exploit:3 pentest:3 attack:2 virus:3 "
        "phishing:3 siem:3 audit:1 intrusion:3 shodan:3 cybersecurity:3 certificate:1.5 "
        "packet:2 traffic:1 semgrep:3 virustotal:3 nessus:3 aes:3 hash:1 login:1",
    ),
    Category(
        "business",
        "Business operations: CRM, sales, marketing and SEO, e-commerce stores, content management, ads, audiences.",
        "crm:3 customer:2 lead:1.5 sales:2 deal:1.5 marketing:3 campaign:2 seo:3 backlink:3 "
        "ecommerce:3 e-commerce:3 shop:2 shopify:3 product:1.5 order:1 cms:3 content:0.5 "
        "wordpress:3 blog:2 analytics:1 audience:2 advertising:3 ads:2 facebook:1.5 "
        "instagram:1.5 newsletter:2 employee:2 recruit:2 salesforce:3 hubspot:3 storyblok:3 "
        "contentful:3 webflow:3 strapi:3 reels:2 brand:1.5 outreach:2 keyword:1 "
        "invoice:0",
    ),
)

CATEGORY_NAMES: tuple[str, ...] = tuple(c.name for c in CATEGORIES) + (OTHER,)
OTHER_DEFINITION = "Anything the categories above do not describe (games, science, lifestyle, …)."


def definition(category: str | None) -> str | None:
    """The one-line definition of a taxonomy category; None for a category a config made up."""
    if category == OTHER:
        return OTHER_DEFINITION
    return next((c.definition for c in CATEGORIES if c.name == category), None)


_NON_WORD = re.compile(r"[^\w]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_UNSTEMMED = frozenset({"news", "teams", "devops", "kubernetes", "series", "status", "canvas", "redis"})


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A light plural stem, the same for keywords and text (`entities`→`entity`, `files`→`file`)."""
    if word in _UNSTEMMED:
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    """Lowercase stemmed words: names split on `_ - .` and camelCase, punctuation dropped."""
    from .tooldoc import split_name

    return tuple(_stem(w) for w in split_name(_NON_WORD.sub(" ", text or "")) if not _CJK.match(w))


@lru_cache(maxsize=1)
def _rules() -> tuple[dict[str, list[tuple[str, float]]], list[tuple[str, str, float]], list[tuple[str, str, float]]]:
    """(word -> [(category, weight)], [(phrase, category, weight)], [(CJK term, category, weight)]).
    `a_b` and `a-b` in a keyword list are phrases."""
    words: dict[str, list[tuple[str, float]]] = {}
    phrases: list[tuple[str, str, float]] = []
    cjk: list[tuple[str, str, float]] = []
    for c in CATEGORIES:
        for item in c.keywords.split():
            term, _, w = item.rpartition(":")
            weight = float(w)
            if not weight:
                continue
            if _CJK.search(term):
                cjk.append((term, c.name, weight))
            elif "_" in term or "-" in term:
                phrases.append((" " + " ".join(_stem(t) for t in re.split(r"[_-]", term)) + " ", c.name, weight))
            else:  # a word listed twice (`entity`, `entities`) counts once, at its higher weight
                same = words.setdefault(_stem(term), [])
                old = next((i for i, (cat, _) in enumerate(same) if cat == c.name), None)
                if old is None:
                    same.append((c.name, weight))
                else:
                    same[old] = (c.name, max(weight, same[old][1]))
    return words, phrases, cjk


def score(
    name: str, description: str = "", title: str | None = None, server: str = ""
) -> dict[str, list[tuple[str, str, float]]]:
    """category -> [(field, term, points)] for every keyword found in the tool's fields."""
    fields = {
        "name": name,
        "title": title if isinstance(title, str) else "",
        "server": server,
        "description": (description if isinstance(description, str) else "")[:DESCRIPTION_CHARS],
    }
    by_word, phrases, cjk = _rules()
    found: dict[str, list[tuple[str, str, float]]] = {}
    for field, text in fields.items():
        if not text:
            continue
        fw = FIELD_WEIGHTS[field]
        words = _words(text)
        joined = " " + " ".join(words) + " "
        hits = [(w, cat, weight) for w in dict.fromkeys(words) for cat, weight in by_word.get(w, ())]
        hits += [(p.strip(), cat, weight) for p, cat, weight in phrases if p in joined]
        hits += [(t, cat, weight) for t, cat, weight in cjk if t in text]
        for term, cat, weight in hits:
            found.setdefault(cat, []).append((field, term, weight * fw))
    return found


def categorize(name: str, description: str = "", title: str | None = None, server: str = "") -> str:
    """The category of a tool by its words (see the module docstring), `other` when none fits."""
    found = score(name, description, title, server)
    best, best_score = OTHER, MIN_SCORE - 1e-9
    for c in CATEGORIES:  # ties go to the earlier category
        s = sum(p for _, _, p in found.get(c.name, ()))
        if s > best_score:
            best, best_score = c.name, s
    return best
