package io.apicurio.common.apps.config;

/**
 * Stand-in for the enum of the same name in apicurio-registry-config-definitions 3.0.9, which
 * Maven Central does not serve here (pom.xml takes 3.0.6, which predates this enum). Apicurio
 * 3.0.9's classes name these constants in their {@link Info} annotations; they only label
 * settings for Apicurio's documentation.
 */
public enum ConfigPropertyCategory {
  CATEGORY_API("api"),
  CATEGORY_AUTH("auth"),
  CATEGORY_CACHE("cache"),
  CATEGORY_CCOMPAT("ccompat"),
  CATEGORY_DOWNLOAD("download"),
  CATEGORY_GITOPS("gitops"),
  CATEGORY_HEALTH("health"),
  CATEGORY_HIDDEN("hidden"),
  CATEGORY_IMPORT("import"),
  CATEGORY_LIMITS("limits"),
  CATEGORY_REDIRECTS("redirects"),
  CATEGORY_REST("rest"),
  CATEGORY_SEMVER("semver"),
  CATEGORY_STORAGE("storage"),
  CATEGORY_SYSTEM("system"),
  CATEGORY_UI("ui");

  private final String rawValue;

  ConfigPropertyCategory(String rawValue) {
    this.rawValue = rawValue;
  }

  public String getRawValue() {
    return rawValue;
  }
}
