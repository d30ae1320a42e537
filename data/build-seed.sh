#!/usr/bin/env bash
# Rebuild data/seed.sql from the curated inputs, deterministically:
#   data/reference/*.toml   hardware (bandwidth + the vendor page that states it) and model file sizes
#   data/curated/*.jsonl    figures relayed by the seed article (accepted or kept as rejections with reasons)
#   data/sources/*.md       published benchmark files, ingested with the URL in their header
#   data/peers/tokatlas/*.json  figures relayed by the tokatlas dataset (see its README), via `tpsdb import`
# Run from the project root: bash data/build-seed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tpsdb=${TPSDB:-.venv/bin/tpsdb}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/seed.sqlite"

"$tpsdb" init --no-seed --db "$db" >/dev/null
"$tpsdb" reference data/reference/*.toml --db "$db"
# exit 1 means "some records were kept as rejections", which the curated files hold on purpose
"$tpsdb" add data/curated/*.jsonl --db "$db" || [ $? -eq 1 ]
for file in data/sources/*.md; do
  url=$(sed -n 's/^source: //p' "$file" | head -n 1)
  retrieved=$(sed -n 's/^retrieved_at: //p' "$file" | head -n 1)
  hardware=$(sed -n 's/^hardware: //p' "$file" | head -n 1)
  "$tpsdb" ingest "$file" --source-url "$url" --retrieved-at "$retrieved" ${hardware:+--hardware "$hardware"} --db "$db" \
    || [ $? -eq 1 ]
done
for file in data/peers/tokatlas/*.json; do
  "$tpsdb" import tokatlas "$file" --db "$db" || [ $? -eq 1 ]  # its rows lacking a condition are rejections
done
"$tpsdb" export-seed --db "$db"
"$tpsdb" summary --db "$db"
