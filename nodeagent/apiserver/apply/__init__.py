"""Server-side apply: field ownership (managedFields) for apply and for every other write.

Why a package: upstream splits this across structured-merge-diff (field sets, typed values, the
merge) and apimachinery's managedfields (the per-manager wire form); the four modules here keep
those seams: fieldset.py (sets of field paths and their FieldsV1 form), typedvalue.py (schema-aware
walks: field sets, comparison, merge, removal), managedfields.py (decoding, encoding and capping
metadata.managedFields) and fieldmanager.py (apply and the bookkeeping of every write, the one the
registry calls).
"""
