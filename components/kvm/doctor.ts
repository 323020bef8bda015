import type { DoctorFinding } from "../kind";
import { which } from "../shared/which";
import { findIsoTool } from "./seed-iso";

/** `egress doctor` for a stack with KVM entries: the tools `up` runs on this machine. */
export function kvmDoctor(): DoctorFinding[] {
    const virsh = which("virsh");
    const out: DoctorFinding[] = [
        { check: "kvm: virsh", ok: !!virsh, detail: virsh ?? "not on PATH", fix: "apt-get install libvirt-clients" },
    ];
    // The same lookup the SeedDisk provider does, so doctor and `up` never disagree.
    let iso: string | undefined;
    try {
        iso = findIsoTool().cmd;
    } catch {
        iso = undefined;
    }
    out.push({
        check: "kvm: ISO builder",
        ok: !!iso,
        detail: iso ?? "none of xorriso, genisoimage, mkisofs on PATH",
        fix: "apt-get install xorriso",
    });
    return out;
}
