/**
 * The image proxy of the fake: `GET /images` and `/images/detail` (Nova API reference, "Images
 * (DEPRECATED)": `nova/api/openstack/compute/images.py`), a fixed list of images
 * ({@link DEFAULT_IMAGES}). Like Nova, the proxy is gone from microversion 2.36: 404 "The resource
 * could not be found." there. Servers may still name any image (the fake checks no image ref).
 *
 * @module
 */
import { fault, type Reply } from '../respond.js';
import { atLeast } from '../views.js';
import type { Ctx } from './context.js';

/** An image of the fake's image list. */
export interface FakeImage {
  /** Image UUID. */
  readonly id: string;
  /** Image name. */
  readonly name: string;
}

/** The fake's images: one CirrOS and one Ubuntu image, as a small DevStack cloud has. */
export const DEFAULT_IMAGES: readonly FakeImage[] = Object.freeze([
  Object.freeze({ id: '0f4b5f6e-2d4b-4c63-9a57-1d2a3b4c5d6e', name: 'cirros-0.6.2-x86_64-disk' }),
  Object.freeze({ id: '7c1e9a2b-5f3d-4e8a-b6c7-8d9e0f1a2b3c', name: 'ubuntu-24.04' }),
]);

/** `GET /images`, `/images/detail` (404 from microversion 2.36, as Nova). */
export function listImages(ctx: Ctx, detail: boolean): Reply {
  if (atLeast(ctx.version, 36)) return fault(404, 'The resource could not be found.');
  const base = ctx.view.baseUrl;
  const images = DEFAULT_IMAGES.map((i) => ({
    id: i.id,
    name: i.name,
    links: [
      { href: `${base}/v2.1/images/${i.id}`, rel: 'self' },
      { href: `${base}/images/${i.id}`, rel: 'bookmark' },
    ],
    ...(detail ? { status: 'ACTIVE', minDisk: 0, minRam: 0, progress: 100, metadata: {} } : {}),
  }));
  return { status: 200, body: { images } };
}
