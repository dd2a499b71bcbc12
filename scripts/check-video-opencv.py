#!/usr/bin/env python3
"""Decode stampede's random-mm videos with OpenCV, as vLLM's video loader does.

usage: STAMPEDE_VIDEO_DUMP=DIR go test -count=1 -run TestWriteVideoFixture ./datasets/
       /usr/bin/python3 scripts/check-video-opencv.py DIR

Needs python3-opencv and python3-numpy (Debian). For each clip-WxHxT.mp4
written from seed 0, it draws vLLM's pixels (numpy.random.default_rng(0)
.integers(0, 256, (T, H, W, 3), dtype=uint8)), writes them the way vLLM
does (cv2.VideoWriter, fourcc mp4v, 30 fps) for comparison, decodes both
files with cv2.VideoCapture, and prints frame count, size, fps, the file
sizes and each file's PSNR against the drawn pixels (OpenCV frames are
BGR, which is how both writers read the drawn channels).
"""
import os
import re
import sys
import tempfile

import cv2
import numpy as np


def decode(path):
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise SystemExit(f"{path}: OpenCV cannot open it")
    fps = cap.get(cv2.CAP_PROP_FPS)
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    return frames, fps


def psnr(frames, want):
    if len(frames) != len(want):
        return float("nan")
    err = np.mean((np.stack(frames).astype(np.float64) - want.astype(np.float64)) ** 2)
    return 10 * np.log10(255.0**2 / err)


def main(directory):
    status = 0
    for name in sorted(os.listdir(directory)):
        m = re.fullmatch(r"clip-(\d+)x(\d+)x(\d+)\.mp4", name)
        if not m:
            continue
        w, h, t = map(int, m.groups())
        want = np.random.default_rng(0).integers(0, 256, (t, h, w, 3), dtype=np.uint8)
        ours = os.path.join(directory, name)
        frames, fps = decode(ours)
        with tempfile.NamedTemporaryFile(suffix=".mp4") as tmp:
            writer = cv2.VideoWriter(tmp.name, cv2.VideoWriter_fourcc(*"mp4v"), 30, (w, h))
            for frame in want:
                writer.write(frame)
            writer.release()
            py_frames, py_fps = decode(tmp.name)
            py_size = os.path.getsize(tmp.name)
        shapes = {f.shape for f in frames}
        ok = len(frames) == t and shapes == {(h, w, 3)} and fps == 30
        status |= not ok
        print(
            f"{name}: {'ok' if ok else 'MISMATCH'}: {len(frames)} frames {shapes} at {fps} fps, "
            f"{os.path.getsize(ours)} bytes, PSNR {psnr(frames, want):.2f} dB; "
            f"OpenCV mp4v: {len(py_frames)} frames at {py_fps} fps, {py_size} bytes, "
            f"PSNR {psnr(py_frames, want):.2f} dB"
        )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
