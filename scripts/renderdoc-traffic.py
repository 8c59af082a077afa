#!/usr/bin/python3
"""Attachment traffic of one frame, counted from the real Vulkan calls in a RenderDoc capture.

Launches a program under RenderDoc (or reads a capture already made), and for every render pass
begun in the captured frame prints its attachments with their load and store ops and sizes, then
the frame's totals: bytes loaded (LOAD ops) and stored (STORE ops) by render passes, and the
copies, blits and clears outside render passes, which move bytes too. This is how the traffic
tables of issue 29 were redone (docs/measurements.md): no model, only what the driver was asked
to do.

    # a window under Xvfb, lavapipe; the capture is taken once the app has drawn --after seconds
    xvfb-run -a -s "-screen 0 1280x720x24" /usr/bin/python3 scripts/renderdoc-traffic.py \
        --capture /tmp/hud-in-pass --after 20 -- \
        $CARGO_TARGET_DIR/debug/examples/bench_ui --window in-pass --width 1280 --height 720 \
        --frames 100000
    /usr/bin/python3 scripts/renderdoc-traffic.py --read /tmp/hud-in-pass_frame123.rdc

Needs `renderdoc` and `python3-renderdoc` (Debian), run with the system Python (`/usr/bin/python3`:
the module is built for it). Counts: a LOAD op loads the attachment's bytes (width x height x
bytes per texel x samples, colour or depth/stencil by the aspect's op), a STORE op stores them;
CLEAR and DONT_CARE loads and DONT_CARE/NONE stores move nothing. Transient (lazily allocated)
attachments are counted like any other: a driver that keeps them on tile moves nothing for a
DONT_CARE, and nothing here charges a DONT_CARE. Not counted: attachments read as textures by a
later pass (a blit or composite sampling the main texture), which also cost bandwidth; the
crate's `stock_bevy` model counts Bevy's upscaling read, this script does not.
"""

import argparse
import os
import signal
import sys
import time

import renderdoc as rd

# Bytes per texel of the formats Bevy, wgpu and this crate use for attachments.
FORMAT_BYTES = {
    "R8_UNORM": 1,
    "R8G8_UNORM": 2,
    "R8G8B8A8_UNORM": 4,
    "R8G8B8A8_SRGB": 4,
    "B8G8R8A8_UNORM": 4,
    "B8G8R8A8_SRGB": 4,
    "A2B10G10R10_UNORM_PACK32": 4,
    "A2R10G10B10_UNORM_PACK32": 4,
    "B10G11R11_UFLOAT_PACK32": 4,
    "E5B9G9R9_UFLOAT_PACK32": 4,
    "R16G16_SFLOAT": 4,
    "R16G16_UNORM": 4,
    "R16G16_SNORM": 4,
    "R32_UINT": 4,
    "R32_SFLOAT": 4,
    "R16G16B16A16_SFLOAT": 8,
    "R16G16B16A16_UNORM": 8,
    "R32G32_UINT": 8,
    "R32G32_SFLOAT": 8,
    "R32G32B32A32_SFLOAT": 16,
    "R32G32B32A32_UINT": 16,
    "D16_UNORM": 2,
    "D32_SFLOAT": 4,
    "X8_D24_UNORM_PACK32": 4,
}
# Depth/stencil formats: (depth bytes, stencil bytes).
DEPTH_STENCIL_BYTES = {
    "D24_UNORM_S8_UINT": (3, 1),
    "D32_SFLOAT_S8_UINT": (4, 1),
    "S8_UINT": (0, 1),
}


def to_py(obj):
    """A structured-data object as plain Python: dicts, lists, ints, strings."""
    base = obj.type.basetype
    if base in (rd.SDBasic.Chunk, rd.SDBasic.Struct):
        return {obj.GetChild(i).name: to_py(obj.GetChild(i)) for i in range(obj.NumChildren())}
    if base == rd.SDBasic.Array:
        return [to_py(obj.GetChild(i)) for i in range(obj.NumChildren())]
    if base == rd.SDBasic.Resource:
        return "res:" + str(obj.AsResourceId())
    if base == rd.SDBasic.Enum:
        return obj.AsString() or obj.AsInt()
    if base in (rd.SDBasic.UnsignedInteger, rd.SDBasic.SignedInteger):
        return obj.AsInt()
    if base == rd.SDBasic.Boolean:
        return obj.AsBool()
    if base == rd.SDBasic.Float:
        return obj.AsFloat()
    if base in (rd.SDBasic.String, rd.SDBasic.Character):
        return obj.AsString()
    return None


def enum_name(value, prefix):
    """`VK_FORMAT_R8G8B8A8_SRGB` -> `R8G8B8A8_SRGB` (RenderDoc may or may not keep the prefix)."""
    text = str(value)
    return text[len(prefix):] if text.startswith(prefix) else text


def first(d, *names):
    """The first of `names` present in the dict `d` (RenderDoc's parameter names vary)."""
    for name in names:
        if isinstance(d, dict) and name in d:
            return d[name]
    return None


class Image:
    def __init__(self, name, fmt, width, height, samples, transient):
        self.name = name
        self.format = fmt
        self.width = width
        self.height = height
        self.samples = samples
        self.transient = transient

    def texel_bytes(self):
        """(colour or depth bytes, stencil bytes) per texel, or None for an unknown format."""
        if self.format in DEPTH_STENCIL_BYTES:
            return DEPTH_STENCIL_BYTES[self.format]
        if self.format in FORMAT_BYTES:
            return (FORMAT_BYTES[self.format], 0)
        return None

    def describe(self):
        samples = f" x{self.samples}" if self.samples > 1 else ""
        transient = " transient" if self.transient else ""
        return f"{self.width}x{self.height} {self.format}{samples}{transient}"


def sample_count(value):
    text = enum_name(value, "VK_SAMPLE_COUNT_")
    digits = "".join(c for c in text if c.isdigit())
    return int(digits) if digits else 1


def traffic(structured):
    """Walks the capture's chunks: resources first (their creation is recorded before the frame),
    then every render pass the frame begins."""
    images = {}
    views = {}
    view_mips = {}
    framebuffers = {}
    render_passes = {}
    names = {}
    # What each command buffer records, then the frame in submission order: the chunks list
    # command buffers in the order they were recorded, which is not the order the GPU runs them
    # (Bevy records its nodes in parallel; the tile pass is recorded by the crate).
    recorded = {}
    passes = []
    outside = []
    for chunk in structured.chunks:
        name = chunk.name
        if name == "vkSetDebugUtilsObjectNameEXT" or name == "vkDebugMarkerSetObjectNameEXT":
            data = to_py(chunk)
            obj = first(data, "Object", "object")
            label = first(data, "ObjectName", "pObjectName", "Name")
            if isinstance(label, dict):
                label = first(label, "pObjectName", "objectName")
            if obj is not None and label:
                names[obj] = label
            continue
        if name in ("vkCreateImage", "vkCreateSwapchainKHR", "vkGetSwapchainImagesKHR",
                    "vkCreateImageView", "vkCreateFramebuffer", "vkCreateRenderPass",
                    "vkCreateRenderPass2", "vkCreateRenderPass2KHR"):
            data = to_py(chunk)
            info = first(data, "CreateInfo", "pCreateInfo") or {}
            if name == "vkCreateImage":
                image = first(data, "Image", "pImage")
                extent = info.get("extent", {})
                usage = str(info.get("usage", ""))
                images[image] = Image(
                    image,
                    enum_name(info.get("format"), "VK_FORMAT_"),
                    extent.get("width", 0),
                    extent.get("height", 0),
                    sample_count(info.get("samples", 1)),
                    "TRANSIENT" in usage,
                )
            elif name == "vkCreateSwapchainKHR":
                swapchain = first(data, "SwapChain", "Swapchain", "pSwapchain")
                extent = info.get("imageExtent", {})
                images[swapchain] = Image(
                    "swapchain",
                    enum_name(info.get("imageFormat"), "VK_FORMAT_"),
                    extent.get("width", 0),
                    extent.get("height", 0),
                    1,
                    False,
                )
            elif name == "vkGetSwapchainImagesKHR":
                swapchain = first(data, "swapchain", "SwapChain", "Swapchain")
                image = first(data, "SwapchainImage", "pSwapchainImages")
                if swapchain in images and image is not None:
                    template = images[swapchain]
                    images[image] = Image("swapchain image", template.format, template.width,
                                          template.height, 1, False)
            elif name == "vkCreateImageView":
                views[first(data, "View", "pView")] = info.get("image")
                # A view of one mip level (Bevy's bloom renders into each level of one
                # texture) covers that level's extent, not the image's.
                mip = (info.get("subresourceRange") or {}).get("baseMipLevel", 0) or 0
                view_mips[first(data, "View", "pView")] = int(mip)
            elif name == "vkCreateFramebuffer":
                framebuffers[first(data, "Framebuffer", "pFramebuffer")] = (
                    info.get("pAttachments") or []
                )
            else:
                render_passes[first(data, "RenderPass", "pRenderPass")] = [
                    {
                        "format": enum_name(a.get("format"), "VK_FORMAT_"),
                        "load": enum_name(a.get("loadOp"), "VK_ATTACHMENT_LOAD_OP_"),
                        "store": enum_name(a.get("storeOp"), "VK_ATTACHMENT_STORE_OP_"),
                        "stencil_load": enum_name(a.get("stencilLoadOp"),
                                                  "VK_ATTACHMENT_LOAD_OP_"),
                        "stencil_store": enum_name(a.get("stencilStoreOp"),
                                                   "VK_ATTACHMENT_STORE_OP_"),
                    }
                    for a in (info.get("pAttachments") or [])
                ]
            continue
        if name == "vkBeginCommandBuffer":
            recorded[first(to_py(chunk), "CommandBuffer", "commandBuffer")] = []
            continue
        if name in ("vkQueueSubmit", "vkQueueSubmit2", "vkQueueSubmit2KHR"):
            for submit in first(to_py(chunk), "pSubmits", "Submits") or []:
                buffers = submit.get("pCommandBuffers") or [
                    info.get("commandBuffer") for info in submit.get("pCommandBufferInfos") or []
                ]
                for buffer in buffers:
                    for kind, entry in recorded.pop(buffer, []):
                        if kind == "pass":
                            entry = (len(passes), entry)
                            passes.append(entry)
                        else:
                            outside.append(entry)
            continue
        if name in ("vkCmdBeginRenderPass", "vkCmdBeginRenderPass2", "vkCmdBeginRenderPass2KHR"):
            data = to_py(chunk)
            begin = first(data, "RenderPassBegin", "pRenderPassBegin") or {}
            attachments = render_passes.get(begin.get("renderPass"), [])
            bound = framebuffers.get(begin.get("framebuffer"), [])
            if not bound:
                # Imageless framebuffers: the views come with the begin info.
                attach_info = first(begin.get("pNext") or {}, "pAttachments") or []
                bound = attach_info
            rows = []
            for index, attachment in enumerate(attachments):
                view = bound[index] if index < len(bound) else None
                image = mip_level(images.get(views.get(view)), view_mips.get(view, 0))
                rows.append((attachment, image, names.get(view) or names.get(views.get(view))))
            recorded.setdefault(data.get("commandBuffer"), []).append(("pass", rows))
        elif name in ("vkCmdCopyImage", "vkCmdBlitImage", "vkCmdResolveImage",
                                        "vkCmdClearColorImage",
                                        "vkCmdClearDepthStencilImage", "vkCmdCopyImage2",
                                        "vkCmdBlitImage2"):
            data = to_py(chunk)
            src = first(data, "srcImage", "image")
            dst = first(data, "destImage", "dstImage")
            recorded.setdefault(data.get("commandBuffer"), []).append(
                ("outside", (name, images.get(src), images.get(dst)))
            )
    unsubmitted = sum(1 for entries in recorded.values() for kind, _ in entries if kind == "pass")
    return passes, outside, unsubmitted


def mip_level(image, mip):
    """`image` as its mip level `mip` (each level halves the extent, down to 1)."""
    if image is None or mip == 0:
        return image
    return Image(image.name, image.format, max(1, image.width >> mip),
                 max(1, image.height >> mip), image.samples, image.transient)


def attachment_bytes(image, attachment):
    """(loaded, stored) bytes of one attachment in one render pass."""
    if image is None:
        return None
    texel = image.texel_bytes()
    if texel is None:
        return None
    texels = image.width * image.height * image.samples
    colour, stencil = texel
    loaded = stored = 0
    if attachment["load"] == "LOAD":
        loaded += colour * texels
    if attachment["store"] == "STORE":
        stored += colour * texels
    if stencil:
        if attachment["stencil_load"] == "LOAD":
            loaded += stencil * texels
        if attachment["stencil_store"] == "STORE":
            stored += stencil * texels
    return loaded, stored


def report(structured, floor_extent):
    passes, outside, unsubmitted = traffic(structured)
    total_loaded = total_stored = 0
    unknown = 0
    print(f"{len(passes)} render passes submitted in the captured frame, in submission order")
    if unsubmitted:
        print(f"({unsubmitted} more recorded in command buffers the frame did not submit)")
    for index, rows in passes:
        print(f"render pass {index}: {len(rows)} attachments")
        for attachment, image, label in rows:
            counted = attachment_bytes(image, attachment)
            what = image.describe() if image else f"unknown image ({attachment['format']})"
            if counted is None:
                unknown += 1
                print(f"  {what}: load {attachment['load']} store {attachment['store']} "
                      "(not counted: unknown image or format)")
                continue
            loaded, stored = counted
            total_loaded += loaded
            total_stored += stored
            label = f" '{label}'" if label else ""
            print(f"  {what}{label}: load {attachment['load']} ({loaded / 1e6:.2f} MB), "
                  f"store {attachment['store']} ({stored / 1e6:.2f} MB)")
    for name, src, dst in outside:
        src_text = src.describe() if src else "-"
        dst_text = dst.describe() if dst else "-"
        print(f"outside a render pass: {name} {src_text} -> {dst_text}")
    total = total_loaded + total_stored
    print(f"loaded {total_loaded / 1e6:.2f} MB, stored {total_stored / 1e6:.2f} MB, "
          f"total {total / 1e6:.2f} MB in {len(passes)} render passes; "
          f"{len(outside)} copies, blits or clears outside render passes")
    if floor_extent:
        width, height = floor_extent
        floor = 4 * width * height
        print(f"floor (one store of a {width}x{height} 4-byte output): {floor / 1e6:.2f} MB; "
              f"{total / floor:.2f}x the floor")
    if unknown:
        print(f"{unknown} attachments not counted (unknown image or format)")
        return 1
    return 0


def capture(program, arguments, after, template):
    """Runs `program` under RenderDoc, captures one frame `after` seconds after its graphics API
    registered, stops it, and returns the capture's path."""
    options = rd.GetDefaultCaptureOptions()
    result = rd.ExecuteAndInject(program, os.getcwd(), " ".join(arguments), [], template, options,
                                 False)
    if result.result.code != rd.ResultCode.Succeeded:
        sys.exit(f"could not launch {program} under RenderDoc: {result.result.Message()}")
    control = rd.CreateTargetControl("", result.ident, "renderdoc-traffic", True)
    if control is None:
        sys.exit("could not connect to the program under RenderDoc")
    registered = None
    path = None
    triggered = False
    deadline = time.time() + after + 600
    while time.time() < deadline and path is None:
        message = control.ReceiveMessage(None)
        kind = message.type
        if kind == rd.TargetControlMessageType.Disconnected:
            break
        if kind == rd.TargetControlMessageType.RegisterAPI and registered is None:
            registered = time.time()
            print(f"{message.apiUse.name} registered; capturing in {after} s", file=sys.stderr)
        if kind == rd.TargetControlMessageType.NewCapture:
            path = message.newCapture.path
            print(f"captured frame {message.newCapture.frameNumber}: {path}", file=sys.stderr)
        if registered is not None and not triggered and time.time() - registered >= after:
            control.TriggerCapture(1)
            triggered = True
        time.sleep(0.1)
    pid = control.GetPID()
    control.Shutdown()
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    if path is None:
        sys.exit("no capture was made (did the program present a frame?)")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--read", help="a capture (.rdc) to read instead of launching a program")
    parser.add_argument("--capture", default="/tmp/renderdoc-traffic",
                        help="the capture's path template when launching")
    parser.add_argument("--after", type=float, default=20.0,
                        help="seconds after the API registers before the frame is captured")
    parser.add_argument("--floor", help="WIDTHxHEIGHT of the output, to print the ratio")
    parser.add_argument("program", nargs="*", help="the program and its arguments, after --")
    args = parser.parse_args()
    rd.InitialiseReplay(rd.GlobalEnvironment(), [])
    try:
        path = args.read
        if path is None:
            if not args.program:
                parser.error("give --read CAPTURE or a program after --")
            path = capture(args.program[0], args.program[1:], args.after, args.capture)
        capture_file = rd.OpenCaptureFile()
        status = capture_file.OpenFile(path, "", None)
        if status.code != rd.ResultCode.Succeeded:
            sys.exit(f"could not open {path}: {status.Message()}")
        floor = None
        if args.floor:
            width, height = args.floor.lower().split("x")
            floor = (int(width), int(height))
        code = report(capture_file.GetStructuredData(), floor)
        capture_file.Shutdown()
        return code
    finally:
        rd.ShutdownReplay()


if __name__ == "__main__":
    sys.exit(main())
