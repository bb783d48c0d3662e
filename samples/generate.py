#!/usr/bin/env python3
"""Writes the sample data for samples/Catalog.xcdatamodeld (deterministic: run it again and
the files come out the same). The files are committed; this script documents how they were
made. Usage: python3 samples/generate.py"""
import csv, gzip, json, os, random

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20261122)

CATEGORIES = ["Tools", "Garden", "Kitchen", "Bath", "Lighting", "Paint", "Électricité", "Plumbing",
              "Hardware", "Storage", "Outdoor", "Flooring", "Heating", "Décor", "Safety"]
ADJECTIVES = ["Heavy-duty", "Compact", "Cordless", "Stainless", "Ergonomic", "Foldable", "Großer", "Mini",
              "Professional", "Classic", "Weatherproof", "Smart", "Quiet", "Café-style", "Non-slip"]
NOUNS = ["drill", "hose", "kettle", "shelf", "lamp", "brush", "socket", "faucet", "hinge", "box",
         "chair", "tile", "radiator", "mirror", "glove", "ladder", "saw", "planter", "towel rail", "bulb"]
SUPPLIERS = [("ACME", "Acme Corporation", "orders@acme.example"), ("NORD", "Nordwerk GmbH", "vertrieb@nordwerk.example"),
             ("SOLEIL", "Soleil & Fils", "contact@soleil.example"), ("KOBE", "Kobe Trading 神戸", "sales@kobe.example"),
             ("BRICO", "Brico Iberia", "pedidos@brico.example"), ("OAK", "Oak & Ash Ltd", None),
             ("PIONEER", "Pioneer Supply", "hello@pioneer.example"), ("LUMEN", "Lumen Lighting", "info@lumen.example")]

def products(count):
    rows = []
    skus = set()
    while len(skus) < count:
        skus.add("%s-%05d" % (rng.choice(["TL", "GD", "KT", "BT", "LG", "PT", "EL"]), rng.randrange(100000)))
    for sku in sorted(skus, key=lambda _: rng.random()):
        name = "%s %s" % (rng.choice(ADJECTIVES), rng.choice(NOUNS))
        if rng.random() < 0.05:
            name += ', "premium" edition'
        description = "" if rng.random() < 0.2 else "%s for %s use.%s" % (
            name, rng.choice(["home", "workshop", "garden", "daily"]),
            "\nSecond line of notes." if rng.random() < 0.03 else "")
        rows.append({
            "sku": sku,
            "name": name,
            "price": "%d.%02d" % (rng.randrange(1, 900), rng.randrange(100)),
            "stock": str(rng.randrange(0, 500)),
            "active": rng.choice(["true", "true", "true", "false"]),
            "created_at": "2025-%02d-%02dT%02d:%02d:%02dZ" % (rng.randrange(1, 13), rng.randrange(1, 29), rng.randrange(24), rng.randrange(60), rng.randrange(60)),
            "category": rng.choice(CATEGORIES),
            "description": description,
            "supplier_code": "NA" if rng.random() < 0.1 else rng.choice([s[0] for s in SUPPLIERS] + ["GONE"]),
            "weight": "NA" if rng.random() < 0.15 else "%.3f" % rng.uniform(0.05, 40),
        })
    return rows

def write_csv(path, fields, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)

def json_value(key, value):
    if value == "NA":
        return None
    if key in ("stock",):
        return int(value)
    if key == "active":
        return value == "true"
    if key == "weight":
        return float(value)
    return value

def main():
    rows = products(3000)
    fields = list(rows[0].keys())
    write_csv(os.path.join(HERE, "products.csv"), fields, rows)
    objects = [{k: json_value(k, v) for k, v in row.items()} for row in rows]
    with open(os.path.join(HERE, "products.ndjson"), "w", encoding="utf-8") as f:
        for obj in objects:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")
    with gzip.GzipFile(os.path.join(HERE, "products.ndjson.gz"), "wb", mtime=0) as f:
        for obj in objects:
            f.write((json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))
    # The JSON array nests the price under "pricing" to show key paths in `from:`.
    nested = []
    for obj in objects:
        copy = dict(obj)
        copy["pricing"] = {"amount": copy.pop("price"), "currency": "EUR"}
        nested.append(copy)
    with open(os.path.join(HERE, "products.json"), "w", encoding="utf-8") as f:
        json.dump(nested, f, ensure_ascii=False, indent=1)
        f.write("\n")
    write_csv(os.path.join(HERE, "suppliers.csv"), ["code", "name", "email"],
              [{"code": c, "name": n, "email": e or ""} for c, n, e in SUPPLIERS])
    # Seed data: categories with a sort order, and a few starter products.
    write_csv(os.path.join(HERE, "seed", "categories.csv"), ["name", "sortOrder"],
              [{"name": c, "sortOrder": str(i * 10)} for i, c in enumerate(CATEGORIES)])
    with open(os.path.join(HERE, "seed", "products.ndjson"), "w", encoding="utf-8") as f:
        for i, c in enumerate(CATEGORIES[:10]):
            f.write(json.dumps({"sku": "STARTER-%02d" % (i + 1), "name": "Starter kit: %s" % c, "price": "%d.99" % (9 + i),
                                "stock": 100, "active": True, "category": c}, ensure_ascii=False) + "\n")

main()
