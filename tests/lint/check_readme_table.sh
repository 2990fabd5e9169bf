#!/usr/bin/env bash
# The README's configuration table must be exactly what psdp-info generates from the config table.
set -euo pipefail
info=$1
readme=$2
expected=$("$info" --markdown)
actual=$(sed -n '/<!-- config-table:begin -->/,/<!-- config-table:end -->/p' "$readme" | sed '1d;$d')
if [[ "$expected" != "$actual" ]]; then
  echo "README.md's parameter table differs from 'psdp-info --markdown'; regenerate it:"
  diff <(echo "$actual") <(echo "$expected") || true
  exit 1
fi
echo "README parameter table is in sync ($(echo "$expected" | wc -l) lines)"
