#!/bin/sh
# Regenerates the FLAC decoder's golden files: WAV clips written by
# Python's wave module, encoded by the reference encoder (Debian's flac)
# with its fixed predictors (-0), LPC (-8) and stereo decorrelation (-8
# with mid/side search), and one 24-bit clip. Run from this directory.
set -e
/usr/bin/python3 - <<'PY'
import math, random, struct, wave
random.seed(1)
def write(name, channels, width, n, rate):
    with wave.open(name, "wb") as w:
        w.setnchannels(channels); w.setsampwidth(width); w.setframerate(rate)
        peak = (1 << (8 * width - 1)) - 1
        frames = bytearray()
        for i in range(n):
            for c in range(channels):
                v = 0.5 * math.sin(2 * math.pi * (220 + 110 * c) * i / rate) + random.uniform(-0.05, 0.05)
                if i % 997 == 0: v = 0  # a constant run
                s = int(v * peak)
                frames += s.to_bytes(width, "little", signed=True)
        w.writeframes(bytes(frames))
write("mono16.wav", 1, 2, 5000, 16000)
write("stereo16.wav", 2, 2, 5000, 22050)
write("mono24.wav", 1, 3, 3000, 48000)
PY
flac -s -f -0 -o mono16-fixed.flac mono16.wav
flac -s -f -8 -o mono16-lpc.flac mono16.wav
flac -s -f -8 -o stereo16.flac stereo16.wav
flac -s -f -0 --no-mid-side -o stereo16-plain.flac stereo16.wav
flac -s -f -5 -o mono24.flac mono24.wav
