"""CEL device selectors with Kubernetes's DRA variables: selectors.py compiles and evaluates, relations.py
makes version values compare as Kubernetes's semver type does.

Why a package of its own at the bottom: the API's validation (objects/resource/device_class.py compiles a
DeviceClass's or claim's selectors at admission, as the API server does) and the control plane's
allocator (which evaluates them against devices) both need it, and validation sits below the
control plane. Kept under controlplane/ it made objects/ import the control plane, a cycle through
half the packages. It imports only quantity and errors, never the objects, the store or the allocator.
"""
