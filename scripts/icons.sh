#!/usr/bin/env bash
# Regenerates the app's icons in public/ (docs: docs/operations.md "Installing the dashboard"). The committed files are the
# output, so building needs none of this; run it after changing the mark. Needs rsvg-convert (Debian's
# librsvg2-bin).
#   public/icon.svg           the mark on a rounded slate square: favicon, manifest icon (purpose "any")
#   public/icon-maskable.svg  the same mark on a full-bleed square, inside the maskable safe zone (a circle of
#                             radius 40% of the side): the launcher may cut any shape out of it
#   public/icon-192.png, public/icon-512.png, public/icon-maskable-512.png, public/apple-touch-icon.png (180)
set -euo pipefail
cd "$(dirname "$0")/../public"

# The mark: three ledger lines, the first one settled (a green check before it). Its bounds (x 120..392,
# y 153..359 once centred) stay within 170 px of the centre, well inside the safe zone (205 px of 512).
mark='<g transform="translate(4 13)">
  <path d="M132 184 l28 28 l52 -56" fill="none" stroke="#22c55e" stroke-width="32" stroke-linecap="round" stroke-linejoin="round"/>
  <rect x="236" y="166" width="152" height="36" rx="18" fill="#f8fafc"/>
  <rect x="124" y="238" width="264" height="36" rx="18" fill="#f8fafc"/>
  <rect x="124" y="310" width="200" height="36" rx="18" fill="#94a3b8"/>
  </g>'

cat > icon.svg <<SVG
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512" width="512" height="512">
  <title>Outcome ledger</title>
  <rect width="512" height="512" rx="112" fill="#0f172a"/>
  $mark
</svg>
SVG

cat > icon-maskable.svg <<SVG
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512" width="512" height="512">
  <title>Outcome ledger</title>
  <rect width="512" height="512" fill="#0f172a"/>
  $mark
</svg>
SVG

rsvg-convert -w 192 -h 192 icon.svg -o icon-192.png
rsvg-convert -w 512 -h 512 icon.svg -o icon-512.png
rsvg-convert -w 512 -h 512 icon-maskable.svg -o icon-maskable-512.png
# iOS rounds the corners itself and shows transparency as black: the full-bleed square.
rsvg-convert -w 180 -h 180 icon-maskable.svg -o apple-touch-icon.png
