"""Shaded triangles on a matplotlib Agg canvas, without a display or a GPU.

Each frame is drawn back to front (the painter's algorithm): the ground's checker tiles, the
robot's shadow, then the robot's triangles sorted by their mean depth, farthest first, then
contact-force arrows and a title on top.  Triangles of closed parts facing away from the camera
are culled; those of open parts are lit from whichever side faces the camera.

**Shading.**  Per triangle, Blinn–Phong with one light fixed to the camera (above, right and
behind it): ``rgb = base (ambient + diffuse max(0, n·l)) + specular max(0, n·h)^24``, with
``n`` the mean of the triangle's vertex normals, or its own normal where the two differ by more
than ``acos`` :data:`SMOOTH_COS` (a crease: box edges and cylinder caps stay sharp).

**Ground.**  The plane ``n·x = h`` as a checker of square tiles (a round size, about a tenth of
the camera distance), fading into the background away from the target; each part's shadow is
the convex hull of its orthogonal projection onto the plane, in one flat colour.

The canvas keeps one NumPy buffer per layer and a matplotlib ``Path`` per buffer row, so a new
frame rewrites coordinates in place instead of building a path object per triangle (what
``PolyCollection.set_verts`` does).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sodyn.viewer.camera import NEAR, View
from sodyn.viewer.geometry import Scene

#: Above this cosine between a triangle's normal and its mean vertex normal, the smooth one shades it.
SMOOTH_COS = 0.8
_TILE_SIZES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)


@dataclasses.dataclass(frozen=True)
class Style:
    """Colours (RGB(A) in [0, 1]) and light: ``background``, the two ``ground`` tile colours,
    ``shadow``, ``force`` (arrows), ``ambient``, ``diffuse``, ``specular``, and ``edges``: stroke
    each triangle in its own colour (hides antialiasing seams; slower)."""

    background: tuple = (1.0, 1.0, 1.0, 1.0)
    ground: tuple = ((0.90, 0.91, 0.93), (0.80, 0.82, 0.85))
    shadow: tuple = (0.62, 0.63, 0.66)
    force: tuple = (0.85, 0.10, 0.10, 1.0)
    ambient: float = 0.42
    diffuse: float = 0.62
    specular: float = 0.10
    edges: bool = True


class _Pool:
    """Polygons of ``k`` vertices drawn by one ``PathCollection``, their paths bound to the rows
    of one buffer."""

    def __init__(self, ax, k: int, zorder: float):
        from matplotlib.collections import PathCollection

        self.ax, self.k = ax, k
        self.buf = np.zeros((0, k + 1, 2))
        self.paths: list = []
        self.coll = PathCollection([], zorder=zorder, linewidths=0.0, edgecolors="none")
        ax.add_collection(self.coll)

    def _grow(self, n: int) -> None:
        from matplotlib.path import Path

        cap = max(n, 2 * len(self.paths), 64)
        self.buf = np.zeros((cap, self.k + 1, 2))
        codes = np.array([Path.MOVETO] + [Path.LINETO] * (self.k - 1) + [Path.CLOSEPOLY], np.uint8)
        # matplotlib's own shortcut for trusted (vertices, codes), as PolyCollection uses; Path() else
        make = getattr(Path, "_fast_from_codes_and_verts", None) or (lambda v, c: Path(v, c))
        self.paths = [make(self.buf[i], codes) for i in range(cap)]

    def set(self, polygons: np.ndarray, rgba: np.ndarray, edges: bool = False) -> None:
        n = len(polygons)
        if n > len(self.paths):
            self._grow(n)
        self.buf[:n, : self.k] = polygons
        self.buf[:n, self.k] = polygons[:, 0] if n else 0.0
        self.coll.set_paths(self.paths[:n])
        self.coll.set_facecolor(rgba)
        self.coll.set_edgecolor(rgba if edges else "none")
        self.coll.set_linewidth(0.6 if edges else 0.0)
        self.coll.set_antialiased(edges or self.k == 4)


class Canvas:
    """A figure of ``size = (W, H)`` pixels on an Agg canvas with the layers a frame needs."""

    def __init__(self, size: tuple[int, int], style: Style = Style(), transparent: bool = False):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import LineCollection
        from matplotlib.figure import Figure

        w, h = size
        self.size, self.style = (int(w), int(h)), style
        self.fig = Figure(figsize=(w / 100.0, h / 100.0), dpi=100)
        self.agg = FigureCanvasAgg(self.fig)
        self.fig.patch.set_facecolor((0, 0, 0, 0) if transparent else style.background)
        ax = self.fig.add_axes((0.0, 0.0, 1.0, 1.0))
        ax.set_xlim(0, w)
        ax.set_ylim(h, 0)
        ax.set_axis_off()
        ax.patch.set_visible(False)
        self.ground, self.shadow = _Pool(ax, 4, 1.0), _Pool(ax, 3, 2.0)
        self.mesh, self.heads = _Pool(ax, 3, 3.0), _Pool(ax, 3, 5.0)
        self.lines = LineCollection([], zorder=4.0, linewidths=2.5, capstyle="round")
        ax.add_collection(self.lines)
        self.text = self.fig.text(0.015, 0.985, "", ha="left", va="top", fontsize=max(9, h // 55), zorder=6)

    def clear(self) -> None:
        for pool in (self.ground, self.shadow, self.mesh, self.heads):
            pool.set(np.zeros((0, pool.k, 2)), np.zeros((0, 4)))
        self.lines.set_segments([])
        self.text.set_text("")

    def image(self) -> np.ndarray:
        """The drawn RGBA image ``(H, W, 4)`` uint8."""
        self.agg.draw()
        return np.asarray(self.agg.buffer_rgba()).copy()


def draw_mesh(canvas: Canvas, scene: Scene, view: View, i: int, body_r, body_p, rgba_scale=None) -> tuple:
    """Put the robot's visible, shaded, depth-sorted triangles on ``canvas`` for body poses
    ``body_r``, ``body_p`` (frame ``i`` of ``view``); returns the world vertices (for shadows)."""
    style = canvas.style
    world, normals = scene.world_vertices(body_r, body_p)
    uv, depth = view.project(world, i)
    f = scene.triangles
    eye, _ = view.at(i)
    a, b, c = world[f[:, 0]], world[f[:, 1]], world[f[:, 2]]
    fn = np.cross(b - a, c - a)
    fn /= np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-300)
    to_eye = eye - (a + b + c) / 3.0
    facing = np.einsum("ij,ij->i", fn, to_eye) > 0
    keep = (depth[f].min(axis=1) > NEAR * view.distance) & (facing | ~scene.face_closed)
    fn = np.where(facing[:, None], fn, -fn)[keep]
    sn = normals[f[keep]].sum(axis=1)
    sn /= np.maximum(np.linalg.norm(sn, axis=1, keepdims=True), 1e-300)
    cos = np.einsum("ij,ij->i", sn, fn)
    sn = np.where(cos[:, None] < 0, -sn, sn)
    n = np.where(np.abs(cos)[:, None] > SMOOTH_COS, sn, fn)
    light = 0.45 * view.right + 0.6 * view.up - 0.65 * view.forward
    light /= np.linalg.norm(light)
    half = light - view.forward
    half /= np.linalg.norm(half)
    base = scene.face_rgba[keep]
    if rgba_scale is not None:
        base = base * rgba_scale
    rgb = base[:, :3] * (style.ambient + style.diffuse * np.clip(n @ light, 0.0, 1.0))[:, None]
    rgb += style.specular * np.clip(n @ half, 0.0, 1.0)[:, None] ** 24
    rgba = np.concatenate([np.clip(rgb, 0.0, 1.0), base[:, 3:]], axis=1)
    order = np.argsort(-depth[f[keep]].mean(axis=1), kind="stable")
    canvas.mesh.set(uv[f[keep][order]], rgba[order], edges=style.edges)
    return world


def tile_size(view: View) -> float:
    """A round tile edge about a tenth of the camera distance."""
    want = 0.1 * view.distance
    return min(_TILE_SIZES, key=lambda s: abs(np.log(s / want)))


def draw_ground(canvas: Canvas, view: View, i: int, plane: tuple[np.ndarray, float], extent: float) -> None:
    """The checker tiles of ``plane = (n, h)`` within ``extent`` of the point under the target."""
    style = canvas.style
    n, h = np.asarray(plane[0], np.float64), float(plane[1])
    eye, target = view.at(i)
    if eye @ n <= h:  # the camera is under the ground: nothing to see of it
        canvas.ground.set(np.zeros((0, 4, 2)), np.zeros((0, 4)))
        return
    t1 = np.cross(n, [0.0, 1.0, 0.0]) if abs(n[1]) < 0.9 else np.cross(n, [1.0, 0.0, 0.0])
    t1 = -t1 / np.linalg.norm(t1) if t1 @ [1.0, 0.0, 0.0] < 0 else t1 / np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    origin = h * n
    foot = target - (target @ n - h) * n
    s = tile_size(view)
    ca, cb = (foot - origin) @ t1 / s, (foot - origin) @ t2 / s
    m = int(np.ceil(extent / s))
    ia, ib = np.meshgrid(np.arange(np.floor(ca) - m, np.ceil(ca) + m), np.arange(np.floor(cb) - m, np.ceil(cb) + m),
                         indexing="ij")
    ia, ib = ia.ravel(), ib.ravel()
    corners = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float64)
    ga = (ia[:, None] + corners[:, 0]) * s
    gb = (ib[:, None] + corners[:, 1]) * s
    world = origin + ga[..., None] * t1 + gb[..., None] * t2  # (n, 4, 3)
    uv, depth = view.project(world, i)
    centre = world.mean(axis=1)
    dist = np.linalg.norm(centre - foot, axis=1) / extent
    keep = (depth.min(axis=1) > NEAR * view.distance) & (dist < 1.0)
    colours = np.where(((ia + ib) % 2 == 0)[:, None], style.ground[0], style.ground[1])
    fade = np.clip((dist - 0.45) / 0.55, 0.0, 1.0)[:, None]
    rgb = colours * (1 - fade) + np.asarray(style.background[:3]) * fade
    canvas.ground.set(uv[keep], np.concatenate([rgb, np.ones((len(rgb), 1))], axis=1)[keep])


def draw_shadow(canvas: Canvas, scene: Scene, view: View, i: int, body_r: np.ndarray, body_p: np.ndarray,
                plane: tuple[np.ndarray, float]) -> None:
    """Each part's shadow on ``plane``: the convex hull of its hull points' orthogonal
    projection, one flat colour (parts wholly under the plane cast none)."""
    from matplotlib.path import Path
    from scipy.spatial import ConvexHull, QhullError

    n, h = np.asarray(plane[0], np.float64), float(plane[1])
    world = np.einsum("kij,kj->ki", body_r[scene.hull_body], scene.hull_points) + body_p[scene.hull_body]
    height = world @ n - h
    flat = world - (height - 1e-4 * view.distance)[:, None] * n
    t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t2 = np.cross(n, t1)
    uv, depth = view.project(flat, i)
    paths = []
    bounds = np.flatnonzero(np.diff(scene.hull_part, prepend=-1, append=-1))
    for a, b in zip(bounds[:-1], bounds[1:]):
        if height[a:b].max() <= 0 or depth[a:b].min() <= NEAR * view.distance:
            continue
        try:
            ring = ConvexHull(np.stack([flat[a:b] @ t1, flat[a:b] @ t2], axis=1)).vertices
        except (QhullError, ValueError):
            continue
        paths.append(Path(np.concatenate([uv[a:b][ring], uv[a:b][ring[:1]]]), closed=True))
    canvas.shadow.coll.set_paths(paths)
    canvas.shadow.coll.set_facecolor(np.append(canvas.style.shadow, 1.0))
    canvas.shadow.coll.set_edgecolor("none")
    canvas.shadow.coll.set_antialiased(True)


def draw_forces(canvas: Canvas, view: View, i: int, points: np.ndarray, vectors: np.ndarray, scale: float) -> None:
    """Arrows from ``points (k, 3)`` along ``scale · vectors (k, 3)`` (zero vectors left out)."""
    if points is None or len(points) == 0:
        canvas.lines.set_segments([])
        canvas.heads.set(np.zeros((0, 3, 2)), np.zeros((0, 4)))
        return
    keep = np.linalg.norm(vectors, axis=1) * scale > 1e-3 * view.distance
    p, q = points[keep], points[keep] + scale * vectors[keep]
    (uv0, _), (uv1, _) = view.project(p, i), view.project(q, i)
    d = uv1 - uv0
    length = np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-9)
    e = d / length
    size = np.minimum(0.35 * length, canvas.size[1] / 60.0)
    perp = np.stack([-e[:, 1], e[:, 0]], axis=1)
    heads = np.stack([uv1, uv1 - size * e + 0.5 * size * perp, uv1 - size * e - 0.5 * size * perp], axis=1)
    canvas.lines.set_segments(np.stack([uv0, uv1 - 0.8 * size * e], axis=1))
    canvas.lines.set_color(canvas.style.force)
    canvas.heads.set(heads, np.broadcast_to(canvas.style.force, (len(heads), 4)))


__all__ = ["Canvas", "SMOOTH_COS", "Style", "draw_forces", "draw_ground", "draw_mesh", "draw_shadow", "tile_size"]
