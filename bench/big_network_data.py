"""A deterministic generator of a realistic enterprise network (a shop) at any size, as the files `kgrag kn load`
reads: a YAML schema and one CSV per object type and relation type.

    python -m bench.big_network_data --instances 100000 --out work/big/100k     # -> work/big/100k/shop.yaml

What it holds (shares of the instances; links ~2 per instance):

| type | share | name (knn, match, ==) | description (match; also knn: ``knn_description``) | other columns |
|---|---|---|---|---|
| Customer | 25 % | "First Last" (real person names) | where they live, what they buy | city, joined, tier |
| Product | 10 % | a real film title + an edition | genre, tags, supplier city | price, stock, released |
| Supplier | 1 % | "Last Trading", "City Goods" … | what it supplies, from where | city, founded |
| Category | ≤ 200 | a genre or tag | one line | — |
| Order | 40 % | "order 0001234 of <title>" | items, amount, when, status | amount, placed_on, status |
| Review | 24 % | "<opinion> <tag> review" | a sentence of opinion words | rating, written_on |

(dates are ISO dates, price and amount floats, the rest integers.) ``descriptions=False`` (``--short``) writes the
same network without its description column and property: every instance a short name and its numbers and dates
alone (issue 53's "short-name shop network").

Links (power-law degrees: a popular customer, product or supplier gets many): Order placed_by Customer (1),
Order contains Product (1–3), Review about Product, Review written_by Customer, Product supplied_by Supplier,
Product in_category Category, Customer referred_by Customer (1 in 10). Names, cities, tags and genres come from the
MetaQA knowledge base in ``shared/data`` (real person names and film titles, their tags) so names and words repeat
as in real data; choices are Zipf-weighted; every value is a function of ``seed`` and the size alone.
:func:`changed_rows` rewrites a given fraction of the instances (new descriptions and amounts) for the sync bench.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Vocabulary", "generate", "vocabulary"]

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SHARES = {"Customer": 0.25, "Product": 0.10, "Supplier": 0.01, "Order": 0.40, "Review": 0.24}
EDITIONS = ["Edition", "Box Set", "Collector's Cut", "Remaster", "Deluxe", "Poster", "Soundtrack", "Blu-ray", "Vinyl",
            "Book", "Mug", "T-shirt", "Figure", "Print", "Calendar"]
SUPPLIER_WORDS = ["Trading", "Goods", "Supply", "Imports", "Wholesale", "Distribution", "Media", "Works", "& Sons"]
OPINIONS = ["great", "disappointing", "surprising", "solid", "overpriced", "beautiful", "flimsy", "excellent", "odd",
            "faithful", "dull", "moving", "sturdy", "late", "perfect", "noisy", "charming", "broken", "clever"]
STATUSES = ["placed", "paid", "shipped", "delivered", "returned", "cancelled"]
CITIES = ["London", "Paris", "Berlin", "Madrid", "Rome", "Lisbon", "Dublin", "Vienna", "Prague", "Warsaw", "Oslo",
          "Stockholm", "Helsinki", "Athens", "Zurich", "Brussels", "Amsterdam", "Copenhagen", "Budapest", "Krakow",
          "Lyon", "Munich", "Milan", "Porto", "Seville", "Hamburg", "Geneva", "Antwerp", "Gothenburg", "Bergen",
          "Boston", "Chicago", "Toronto", "Seattle", "Austin", "Denver", "Montreal", "Sydney", "Melbourne", "Osaka"]
START = dt.date(2015, 1, 1)


@dataclass(frozen=True)
class Vocabulary:
    first: list[str]
    last: list[str]
    titles: list[str]
    tags: list[str]
    genres: list[str]


def vocabulary(kb: Path = DATA / "metaqa" / "kb.txt") -> Vocabulary:
    """Real names and words from the MetaQA knowledge base (sorted: the same on every machine)."""
    people: set[str] = set()
    titles: set[str] = set()
    tags: set[str] = set()
    genres: set[str] = set()
    with kb.open(encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("|")
            if len(parts) != 3:
                continue
            subject, relation, obj = parts
            titles.add(subject)
            if relation in ("directed_by", "written_by", "starred_actors"):
                people.add(obj)
            elif relation == "has_tags":
                tags.add(obj)
            elif relation == "has_genre":
                genres.add(obj)
    split = [p.split() for p in sorted(people) if len(p.split()) == 2 and p.isascii()]
    return Vocabulary(first=sorted({p[0] for p in split}), last=sorted({p[1] for p in split}),
                      titles=sorted(t for t in titles if t.isascii() and 2 <= len(t) <= 60),
                      tags=sorted(t for t in tags if t.isascii() and len(t) <= 30), genres=sorted(genres))


def _zipf_pick(rng: np.random.Generator, n_items: int, size: int, alpha: float = 1.1) -> np.ndarray:
    """``size`` indices into ``n_items`` with Zipf-like popularity over a seeded random order of the items."""
    weights = 1.0 / np.arange(1, n_items + 1) ** alpha
    order = rng.permutation(n_items)
    return order[rng.choice(n_items, size=size, p=weights / weights.sum())]


def _words(rng: np.random.Generator, pool: list[str], size: int, alpha: float = 1.05) -> np.ndarray:
    return np.asarray(pool, dtype=object)[_zipf_pick(rng, len(pool), size, alpha)]


def _dates(rng: np.random.Generator, size: int, days: int = 3650) -> list[str]:
    offsets = rng.integers(0, days, size)
    base = np.datetime64(START.isoformat())
    return [str(d) for d in (base + offsets.astype("timedelta64[D]"))]


def _counts(n: int) -> dict[str, int]:
    counts = {t: max(2, int(n * share)) for t, share in SHARES.items()}
    counts["Customer"] += max(0, n - sum(counts.values()))
    return counts


def _write(path: Path, header: list[str], columns: list, drop: frozenset[str] = frozenset()) -> None:  # noqa: ANN001
    """One CSV of ``columns`` under ``header``, leaving out the columns named in ``drop``."""
    keep = [i for i, name in enumerate(header) if name not in drop]
    header, columns = [header[i] for i in keep], [columns[i] for i in keep]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(zip(*columns, strict=True))


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:07d}" for i in range(n)]


def _schema(kn_id: str, knn_description: bool, descriptions: bool = True) -> str:
    name_ops = "[knn, match, '==', prefix]"
    desc_ops = "[knn, match]" if knn_description else "[match]"
    desc = f"      - {{name: description, type: text, condition_operations: {desc_ops}}}\n" if descriptions else ""

    def obj(type_id: str, comment: str, extra: str = "") -> str:
        return (f"  - id: {type_id}\n    name: {type_id}\n    comment: {comment}\n    display_key: name\n"
                f"    data_properties:\n      - {{name: name, type: string, condition_operations: {name_ops}}}\n"
                f"{desc}{extra}")

    def prop(name: str, typ: str, ops: str) -> str:
        return f"      - {{name: {name}, type: {typ}, condition_operations: {ops}}}\n"

    rng_ops = "['==', '>', '<', range]"
    types = "".join([
        obj("Customer", "a customer of the shop", prop("city", "string", "['==', match]")
            + prop("joined", "date", rng_ops) + prop("tier", "integer", rng_ops)),
        obj("Product", "a product the shop sells", prop("price", "float", rng_ops) + prop("stock", "integer", rng_ops)
            + prop("released", "date", rng_ops)),
        obj("Supplier", "a company supplying products", prop("city", "string", "['==', match]")
            + prop("founded", "integer", rng_ops)),
        obj("Category", "a product category"),
        obj("Order", "an order placed by a customer", prop("amount", "float", rng_ops)
            + prop("placed_on", "date", rng_ops) + prop("status", "string", "['==']")),
        obj("Review", "a customer's review of a product", prop("rating", "integer", rng_ops)
            + prop("written_on", "date", rng_ops)),
    ])
    relations = [("placed_by", "Order", "Customer", "placed by"), ("contains", "Order", "Product", "contains"),
                 ("about", "Review", "Product", "review of"), ("written_by", "Review", "Customer", "written by"),
                 ("supplied_by", "Product", "Supplier", "supplied by"), ("in_category", "Product", "Category",
                                                                          "in category"),
                 ("referred_by", "Customer", "Customer", "referred by")]
    rels = "".join(f"  - {{id: {r}, name: {n}, source_object_type_id: {s}, target_object_type_id: {t}}}\n"
                   for r, s, t, n in relations)
    data = "".join(f"    - {{object_type: {ot}, file: {ot.lower()}.csv}}\n" for ot in [*SHARES, "Category"])
    links = "".join(f"    - {{relation_type: {r}, file: link_{r}.csv}}\n" for r, *_ in relations)
    return (f"kn_id: {kn_id}\nname: Shop ({kn_id})\ncomment: A generated shop network (bench/big_network_data.py)\n"
            f"object_types:\n{types}relation_types:\n{rels}action_types: []\ndata:\n  instances:\n{data}"
            f"  links:\n{links}")


def generate(n_instances: int, out: Path, seed: int = 0, knn_description: bool = False, kn_id: str = "shop",
             vocab: Vocabulary | None = None, changed: float = 0.0, descriptions: bool = True) -> dict[str, int]:
    """Write the network of about ``n_instances`` instances under ``out`` (``shop.yaml`` and its CSV files);
    ``changed``: the fraction of Customers, Products and Orders whose description (and amount) differ from the
    ``changed=0`` network of the same seed (a sync's 1 % change); ``descriptions=False``: no description column
    (the same rows and links otherwise). Returns the counts written."""
    vocab = vocab or vocabulary()
    drop = frozenset() if descriptions else frozenset({"description"})
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n = _counts(n_instances)
    n_cat = min(200, len(vocab.genres) + len(vocab.tags))
    ids = {t: _ids(t[0].lower(), n[t]) for t in SHARES}
    categories = (vocab.genres + vocab.tags)[:n_cat]
    ids["Category"] = [f"g{i:04d}" for i in range(n_cat)]
    change_rng = np.random.default_rng(seed + 1)

    def changed_mask(size: int) -> np.ndarray:
        return change_rng.random(size) < changed if changed > 0 else np.zeros(size, bool)

    # customers
    c = n["Customer"]
    first, last = _words(rng, vocab.first, c, 0.9), _words(rng, vocab.last, c, 0.9)
    cities = _words(rng, CITIES, c, 0.8)
    likes = _words(rng, vocab.tags, c), _words(rng, vocab.tags, c)
    desc = [f"{f} lives in {city} and buys {a} and {b} titles."
            for f, city, a, b in zip(first, cities, *likes, strict=True)]
    mask = changed_mask(c)
    desc = [d.replace("buys", "now mostly buys") if m else d for d, m in zip(desc, mask, strict=True)]
    _write(out / "customer.csv", ["id", "name", "description", "city", "joined", "tier"],
           [ids["Customer"], [f"{a} {b}" for a, b in zip(first, last, strict=True)], desc, cities, _dates(rng, c),
            rng.integers(1, 5, c).tolist()], drop)
    # suppliers
    s = n["Supplier"]
    s_city = _words(rng, CITIES, s, 0.8)
    s_first, s_word = _words(rng, vocab.last + CITIES, s, 0.7), _words(rng, SUPPLIER_WORDS, s, 0.5)
    s_name = [f"{a} {b}" for a, b in zip(s_first, s_word, strict=True)]
    s_kind = _words(rng, vocab.genres, s, 0.7)
    _write(out / "supplier.csv", ["id", "name", "description", "city", "founded"],
           [ids["Supplier"], s_name,
            [f"Supplies {k} titles and merchandise from {ci}." for k, ci in zip(s_kind, s_city, strict=True)],
            s_city, rng.integers(1950, 2024, s).tolist()], drop)
    # categories
    _write(out / "category.csv", ["id", "name", "description"],
           [ids["Category"], categories, [f"Products about {x}." for x in categories]], drop)
    # products
    p = n["Product"]
    titles = _words(rng, vocab.titles, p, 0.6)
    editions = _words(rng, EDITIONS, p, 0.8)
    genre, tag = _words(rng, vocab.genres, p), _words(rng, vocab.tags, p)
    price = np.round(rng.lognormal(3.0, 0.7, p), 2)
    supplier_of = _zipf_pick(rng, s, p, 1.2)
    mask = changed_mask(p)
    p_desc = [f"{g} {e.lower()} of {t}, about {tg}, shipped from {s_city[si]}; {'on sale' if m else 'in stock'}."
              for g, e, t, tg, si, m in zip(genre, editions, titles, tag, supplier_of, mask, strict=True)]
    _write(out / "product.csv", ["id", "name", "description", "price", "stock", "released"],
           [ids["Product"], [f"{t} {e}" for t, e in zip(titles, editions, strict=True)], p_desc, price.tolist(),
            rng.integers(0, 500, p).tolist(), _dates(rng, p)], drop)
    # orders
    o = n["Order"]
    buyer = _zipf_pick(rng, c, o, 1.05)
    items = rng.integers(1, 4, o)
    first_item = _zipf_pick(rng, p, o, 1.1)
    amount = np.round(price[first_item] * items * rng.uniform(0.8, 1.2, o), 2)
    mask = changed_mask(o)
    amount = np.where(mask, np.round(amount * 1.1, 2), amount)
    status = _words(rng, STATUSES, o, 1.5)
    placed = _dates(rng, o)
    o_names = [f"order {i[1:]} of {titles[j]}" for i, j in zip(ids["Order"], first_item, strict=True)]
    o_desc = [f"{k} item{'s' if k > 1 else ''} of {titles[j]} for {a:.2f}, {st} on {d}."
              for k, j, a, st, d in zip(items, first_item, amount, status, placed, strict=True)]
    _write(out / "order.csv", ["id", "name", "description", "amount", "placed_on", "status"],
           [ids["Order"], o_names, o_desc, amount.tolist(), placed, status], drop)
    # reviews
    r = n["Review"]
    about = _zipf_pick(rng, p, r, 1.1)
    opinion, r_tag = _words(rng, OPINIONS, r, 0.7), _words(rng, vocab.tags, r)
    rating = rng.integers(1, 6, r)
    _write(out / "review.csv", ["id", "name", "description", "rating", "written_on"],
           [ids["Review"], [f"{a} {t} review" for a, t in zip(opinion, r_tag, strict=True)],
            [f"The {t} of {titles[j]} was {a}; {k} stars."
             for a, t, j, k in zip(opinion, r_tag, about, rating, strict=True)],
            rating.tolist(), _dates(rng, r)], drop)
    # links
    links: dict[str, tuple[list[str], list[str]]] = {}
    links["placed_by"] = (ids["Order"], [ids["Customer"][i] for i in buyer])
    extra = np.repeat(np.arange(o), items - 1)
    more = _zipf_pick(rng, p, len(extra), 1.1)
    links["contains"] = ([*ids["Order"], *(ids["Order"][i] for i in extra)],
                         [*(ids["Product"][j] for j in first_item), *(ids["Product"][j] for j in more)])
    links["about"] = (ids["Review"], [ids["Product"][j] for j in about])
    links["written_by"] = (ids["Review"], [ids["Customer"][i] for i in _zipf_pick(rng, c, r, 1.05)])
    links["supplied_by"] = (ids["Product"], [ids["Supplier"][i] for i in supplier_of])
    links["in_category"] = (ids["Product"], [ids["Category"][i] for i in _zipf_pick(rng, n_cat, p, 1.0)])
    referred = np.flatnonzero(rng.random(c) < 0.1)
    referrer = _zipf_pick(rng, c, len(referred), 1.2)
    keep = referred != referrer
    links["referred_by"] = ([ids["Customer"][i] for i in referred[keep]], [ids["Customer"][i] for i in referrer[keep]])
    for rel, (src, dst) in links.items():
        _write(out / f"link_{rel}.csv", ["source_id", "target_id"], [src, dst])
    (out / "shop.yaml").write_text(_schema(kn_id, knn_description, descriptions), encoding="utf-8")
    counts = {**n, "Category": n_cat}
    return {"instances": sum(counts.values()), "links": sum(len(s) for s, _ in links.values()), **counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--knn-description", action="store_true")
    parser.add_argument("--changed", type=float, default=0.0)
    parser.add_argument("--short", action="store_true", help="no descriptions: short names only")
    args = parser.parse_args()
    print(generate(args.instances, args.out, args.seed, args.knn_description, changed=args.changed,
                   descriptions=not args.short))


if __name__ == "__main__":
    main()
