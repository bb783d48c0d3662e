/// Lade's version, printed by `lade --version`.
public enum LadeVersion {
    public static let string = "0.1.0"
}
