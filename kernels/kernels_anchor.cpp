// Keeps the klab_kernels OBJECT library non-empty while kernels/ holds no variant yet. Each
// variant is a self-contained kernels/<op>_<technique>.cu that registers itself (README.md,
// "Adding a variant"); the build picks every kernels/*.cu up by itself.
