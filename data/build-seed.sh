#!/usr/bin/env bash
# Rebuild data/seed.sql from the curated inputs, deterministically:
#   data/reference/*.toml   hardware (bandwidth + the vendor page that states it) and model file sizes
#   data/curated/*.jsonl    figures relayed by the seed article (accepted or kept as rejections with reasons)
#   ../shared/sources-extracts/*.md   published benchmark files, ingested with the URL in their header
#   ../shared/peers/tokatlas/*.json   figures relayed by the tokatlas dataset (see its README), via `tpsdb import`
#   sources/*.toml with a [seed] table: each source's copies in ../shared, via `tpsdb load --seeded` (the same
#                           kind and engine as a refresh, offline)
# The project keeps no copy of those files: set SHARED to where they are (default ../shared).
# Run from the project root: bash data/build-seed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tpsdb=${TPSDB:-.venv/bin/tpsdb}
shared=${SHARED:-../shared}
[ -d "$shared" ] || { echo "error: $shared (the shared data folder) is missing; set SHARED" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/seed.sqlite"

"$tpsdb" init --no-seed --db "$db" >/dev/null
"$tpsdb" reference data/reference/*.toml --db "$db"
# exit 1 means "some records were kept as rejections", which the curated files hold on purpose
"$tpsdb" add data/curated/*.jsonl --db "$db" || [ $? -eq 1 ]
for file in "$shared"/sources-extracts/*.md; do
  url=$(sed -n 's/^source: //p' "$file" | head -n 1)
  retrieved=$(sed -n 's/^retrieved_at: //p' "$file" | head -n 1)
  hardware=$(sed -n 's/^hardware: //p' "$file" | head -n 1)
  if [ -z "$hardware" ]; then  # the machine, as the source file of the same URL states it
    hardware=$(grep -l -F "url = \"$url\"" sources/*.toml | head -n 1 | xargs -r sed -n 's/^hardware = "\(.*\)"$/\1/p')
  fi
  "$tpsdb" ingest "$file" --source-url "$url" --retrieved-at "$retrieved" ${hardware:+--hardware "$hardware"} --db "$db" \
    || [ $? -eq 1 ]
done
for file in "$shared"/peers/tokatlas/*.json; do
  "$tpsdb" import tokatlas "$file" --db "$db" || [ $? -eq 1 ]  # its rows lacking a condition are rejections
done
"$tpsdb" load --seeded --shared "$shared" --db "$db" >/dev/null
"$tpsdb" export-seed --db "$db"
"$tpsdb" summary --db "$db"
