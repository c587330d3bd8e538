#!/usr/bin/env bash
# Install headless Chromium, its WebDriver and a font (Debian packages chromium, chromium-driver,
# fonts-dejavu-core) for the browser test of the HTML report (tests/analysis/reporting/test_report_browser.py).
# Idempotent: does nothing when all three are already there. Needs root (or sudo) and the Debian
# package mirror.
set -euo pipefail

FONT=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 && [ -e "$FONT" ]; then
    echo "install_chromium: chromium, chromedriver and fonts already installed"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core
chromedriver --version
