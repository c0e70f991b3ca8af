#!/usr/bin/python3
"""The Caption tab's sample photos: public-domain / CC0 photographs from scikit-image's data folder (Debian
python3-skimage), scaled to at most 512 px a side and saved as JPEG (quality 85) in web/app/samples/, plus
samples.json (the gallery's list) for the page. Licences: web/app/samples/ATTRIBUTION.md.

    /usr/bin/python3 scripts/make_samples.py [--source /usr/lib/python3/dist-packages/skimage/data] [--out web/app/samples]
"""
import argparse
import json
import os

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = "/usr/lib/python3/dist-packages/skimage/data"
MAX_SIDE = 512
QUALITY = 85

# (source file, sample name, alt text)
SAMPLES = [
    ("chelsea.png", "cat", "A close-up of a tabby cat (Chelsea) with green eyes"),
    ("coffee.png", "coffee", "A red cup of espresso on a saucer with a spoon, on a wooden table"),
    ("astronaut.png", "astronaut", "The astronaut Eileen Collins in an orange suit, holding a helmet, in front of a flag"),
    ("rocket.jpg", "rocket", "A Falcon 9 rocket on its launch pad at dusk, between lightning towers"),
    ("hubble_deep_field.jpg", "galaxies", "Hubble's deep field: many galaxies on a dark sky"),
    # Grayscale (stored as RGB), but a person outdoors: the one sample from the captioners' Flickr8k world.
    ("camera.png", "cameraman", "Black and white: a man in a dark coat filming with a camera on a tripod, on a lawn"),
]


def convert(source_dir, out_dir, names=None):
    os.makedirs(out_dir, exist_ok=True)
    listed = []
    for source, name, alt in SAMPLES:
        if names is not None and name not in names:
            continue
        with Image.open(os.path.join(source_dir, source)) as im:
            im = im.convert("RGB")
            scale = min(1.0, MAX_SIDE / max(im.size))
            size = (max(1, round(im.width * scale)), max(1, round(im.height * scale)))
            if size != im.size:
                im = im.resize(size, Image.LANCZOS)
            path = os.path.join(out_dir, f"{name}.jpg")
            # No EXIF or ICC profile: the pixels are sRGB as they are, decoded the same by every reader.
            im.save(path, "JPEG", quality=QUALITY, optimize=True, progressive=False)
        listed.append({"file": f"{name}.jpg", "name": name, "alt": alt, "width": size[0], "height": size[1]})
        print(f"{path}: {size[0]}x{size[1]}, {os.path.getsize(path)} bytes")
    with open(os.path.join(out_dir, "samples.json"), "w") as f:
        json.dump({"samples": listed}, f, indent=1)
        f.write("\n")
    return listed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default=SOURCE)
    ap.add_argument("--out", default=os.path.join(ROOT, "web", "app", "samples"))
    args = ap.parse_args()
    convert(args.source, args.out)


if __name__ == "__main__":
    main()
