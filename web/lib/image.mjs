// Images for caption(): every accepted kind becomes RGBA pixels { data, width, height } (row-major, 4 bytes a
// pixel, alpha ignored by the engine), checked here so that a bad image is a clear message before any engine call.
//   main thread: ImageData, { data, width, height }, HTMLImageElement / HTMLCanvasElement / HTMLVideoElement /
//                OffscreenCanvas (drawn to a canvas); ImageBitmap in a browser is transferred to the worker as is
//   worker:      ImageBitmap read back through an OffscreenCanvas (pixelsFromBitmap)

export const MAX_IMAGE_SIDE = 8192;  // the engine's limit (image::kMaxImageSide)

const KINDS = 'ImageData, ImageBitmap, HTMLImageElement, HTMLCanvasElement or { data: Uint8Array, width, height }';

const isInstance = (value, name) => typeof globalThis[name] === 'function' && value instanceof globalThis[name];

export function isImageBitmap(image) {
  return isInstance(image, 'ImageBitmap');
}

function isDrawable(image) {
  return ['HTMLImageElement', 'HTMLCanvasElement', 'HTMLVideoElement', 'OffscreenCanvas', 'SVGImageElement']
    .some((name) => isInstance(image, name));
}

/** Throws unless width and height are integers in 1..MAX_IMAGE_SIDE. */
export function checkImageSize(width, height) {
  for (const [name, value] of [['width', width], ['height', height]]) {
    if (!Number.isInteger(value) || value <= 0) {
      throw new Error(`attnlab: the image ${name} must be a positive integer, got ${value}`);
    }
  }
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) {
    throw new Error(`attnlab: the image is too large: ${width} × ${height}, at most ${MAX_IMAGE_SIDE} pixels a side`);
  }
}

/** Checks an RGBA pixel object ({ data, width, height } or ImageData); returns { data, width, height }. */
export function checkPixels(image) {
  if (image === null || typeof image !== 'object') {
    throw new Error(`attnlab: caption() needs an image: ${KINDS}; got ${image === null ? 'null' : typeof image}`);
  }
  const { data, width, height } = image;
  if (!(data instanceof Uint8Array || data instanceof Uint8ClampedArray)) {
    throw new Error(`attnlab: caption() needs an image: ${KINDS} (its data must be a Uint8Array or Uint8ClampedArray of RGBA bytes)`);
  }
  checkImageSize(width, height);
  if (data.length !== width * height * 4) {
    throw new Error(`attnlab: the image data has ${data.length} bytes, but ${width} × ${height} RGBA needs ${width * height * 4}`);
  }
  return { data, width, height };
}

function sizeOf(image) {
  if (isInstance(image, 'HTMLImageElement') || isInstance(image, 'SVGImageElement')) {
    if (isInstance(image, 'HTMLImageElement') && !image.complete) throw new Error('attnlab: the image has not loaded yet');
    return [image.naturalWidth ?? image.width, image.naturalHeight ?? image.height];
  }
  if (isInstance(image, 'HTMLVideoElement')) return [image.videoWidth, image.videoHeight];
  return [image.width, image.height];
}

function draw(image, width, height) {
  checkImageSize(width, height);
  const canvas = typeof OffscreenCanvas === 'function'
    ? new OffscreenCanvas(width, height)
    : Object.assign(document.createElement('canvas'), { width, height });
  const context = canvas.getContext('2d', { willReadFrequently: true });
  if (!context) throw new Error('attnlab: could not get a 2D canvas to read the image pixels');
  context.drawImage(image, 0, 0, width, height);
  try {
    const { data } = context.getImageData(0, 0, width, height);
    return { data, width, height };
  } catch (error) {
    // A cross-origin image without CORS taints the canvas.
    throw new Error(`attnlab: the image pixels cannot be read (${error.message})`);
  }
}

/**
 * Main thread: any accepted image except an ImageBitmap bound for a worker -> checked RGBA pixels. Drawable
 * elements are drawn at their natural size.
 */
export function toPixels(image) {
  if (isImageBitmap(image)) return pixelsFromBitmap(image);
  if (isDrawable(image)) {
    const [width, height] = sizeOf(image);
    return draw(image, width, height);
  }
  return checkPixels(image);
}

/** Throws unless the ImageBitmap is open (a closed or transferred one is 0 × 0) and of an accepted size. */
export function checkBitmap(bitmap) {
  if (bitmap.width === 0 && bitmap.height === 0) {
    throw new Error('attnlab: the ImageBitmap was closed (or already transferred to a worker)');
  }
  checkImageSize(bitmap.width, bitmap.height);
}

/** An ImageBitmap's RGBA pixels (in a worker or on the main thread), read through an OffscreenCanvas. */
export function pixelsFromBitmap(bitmap) {
  if (!isImageBitmap(bitmap)) throw new Error(`attnlab: caption() needs an image: ${KINDS}`);
  checkBitmap(bitmap);
  return draw(bitmap, bitmap.width, bitmap.height);
}
