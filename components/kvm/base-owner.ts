/**
 * Whose upload a base volume is. libvirt volumes carry no metadata, and a base is shared by every stack
 * that uses the image, so the uploader marks its upload with a second, empty volume beside it,
 * `<volume>.upload-<owner tag>`, made before the base's `vol-create` and removed once the base is
 * verified or removed. A marker left behind means that uploader died mid-upload (SIGKILL, power loss):
 * only the marker's owner may then remove the unverified base (crash undo, or its next create).
 *
 * The owner is the stack's installation (src/model/installation.ts): two installations with one stack
 * name never take each other's upload for their own. State written before ids holds (project, stack)
 * only; its tag is the hash a legacy installation adopted as its id, so both spell the same tag. Plain
 * functions, serialized with the BaseImage provider.
 */
import { listVolumes, Virsh, volumePath } from "./libvirt";

/** Who creates a BaseImage: the stack whose `up` runs it. */
export interface BaseOwner {
    project: string;
    stack: string;
    /** The installation id; absent in state written before ids. */
    installation?: string;
}

/** The one ownership rule: the tag an owner's upload markers carry. */
export function ownerTag(owner: BaseOwner): string {
    if (owner.installation) return owner.installation;
    const crypto = require("node:crypto") as typeof import("node:crypto");
    return crypto.createHash("sha256").update(`${owner.project}\0${owner.stack}`).digest("hex").slice(0, 8);
}

const MARKER_INFIX = ".upload-";

/** The marker volume of `owner`'s upload of `volume`. */
export function uploadMarkerName(volume: string, owner: BaseOwner): string {
    return `${volume}${MARKER_INFIX}${ownerTag(owner)}`;
}

/** True when `volume` in `pool` is an upload of `owner` that never finished (its marker is there). */
export async function isOurUpload(
    virsh: Virsh,
    pool: string,
    volume: string,
    owner: BaseOwner | undefined,
): Promise<boolean> {
    if (!owner) return false; // state from before markers: ownership cannot be shown
    return (await volumePath(virsh, pool, uploadMarkerName(volume, owner))) !== undefined;
}

/** Markers of anyone's unfinished uploads of `volume` (for messages: who else is, or was, uploading). */
export async function uploadMarkers(virsh: Virsh, pool: string, volume: string): Promise<string[]> {
    return (await listVolumes(virsh, pool)).filter((n) => n.startsWith(`${volume}${MARKER_INFIX}`));
}
